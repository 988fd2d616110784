package keys

import (
	"context"
	"fmt"
)

// Shared is a copy of the keys that several nodes share: a cluster's
// (package cluster keeps it on pmxcfs). Change runs fn, under the shared
// copy's lock, on a state directory that holds the shared keys as a
// keys.json (and the shared policies), stores what fn left there in the
// shared copy, and refreshes this node's mirror before it returns. When fn
// fails, or the shared copy cannot be changed (a node without quorum),
// nothing is stored and the error says why.
type Shared interface {
	Change(ctx context.Context, fn func(stateDir string) error) error
}

// DecodeFile parses the content of a keys.json strictly, as the Store
// reads it: a supported version, every record valid, no id twice.
func DecodeFile(data []byte) ([]Record, error) {
	recs, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	return recs, nil
}

// EncodeFile is the content of a keys.json holding recs, as the Store
// writes it.
func EncodeFile(recs []Record) ([]byte, error) {
	if recs == nil {
		recs = []Record{}
	}
	data, err := encode(recs)
	if err != nil {
		return nil, fmt.Errorf("keys: encode: %w", err)
	}
	return data, nil
}
