package schema

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Marker is the JavaScript assignment that introduces the schema array in
// apidoc.js. Only the JSON array that follows it is read; the viewer code
// after the array is never looked at, let alone evaluated.
const Marker = "const apiSchema = ["

// MaxFileSize bounds the apidoc.js files this package reads. PVE 9.2 ships
// about 4.3 MB; anything beyond 64 MiB is not an API schema.
const MaxFileSize = 64 << 20

// rawNode is one tree node of apidoc.js as it is on disk.
type rawNode struct {
	Path     string                `json:"path"`
	Text     string                `json:"text"`
	Leaf     pveFlag               `json:"leaf"`
	Info     map[string]*rawMethod `json:"info"`
	Children []*rawNode            `json:"children"`
}

// rawMethod is one entry of a node's info map.
type rawMethod struct {
	Method            string         `json:"method"`
	Name              string         `json:"name"`
	Description       string         `json:"description"`
	AllowToken        *pveFlag       `json:"allowtoken"`
	Parameters        *rawObject     `json:"parameters"`
	Returns           jsontext.Value `json:"returns"`
	Permissions       *Permissions   `json:"permissions"`
	Protected         pveFlag        `json:"protected"`
	ProxyTo           *string        `json:"proxyto"`
	DownloadAllowed   pveFlag        `json:"download_allowed"`
	ExposeCredentials pveFlag        `json:"expose_credentials"`
	Unstable          pveFlag        `json:"unstable"`
}

// rawObject is an object schema: the parameters of a method.
type rawObject struct {
	Type                 string            `json:"type"`
	AdditionalProperties *pveFlag          `json:"additionalProperties"`
	Properties           map[string]*Param `json:"properties"`
}

// pveFlag is PVE's boolean: 0/1, "0"/"1", true/false or null (false).
type pveFlag bool

// UnmarshalJSONFrom accepts the spellings PVE's schema uses for booleans.
func (b *pveFlag) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case 't', 'f':
		*b = pveFlag(tok.Bool())
	case 'n':
		*b = false
	case '0':
		v, err := tok.Float()
		if err != nil {
			return err
		}
		*b = v != 0
	case '"':
		switch s := tok.String(); s {
		case "1", "true":
			*b = true
		case "0", "false", "":
			*b = false
		default:
			return fmt.Errorf("boolean flag %q is not 0 or 1", s)
		}
	default:
		return fmt.Errorf("boolean flag must be 0 or 1, not %v", tok.Kind())
	}
	return nil
}

// extract finds the schema array in an apidoc.js file and decodes exactly
// that array into the raw tree.
func extract(data []byte) ([]*rawNode, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("file is %d bytes, over the %d-byte limit for an API schema", len(data), MaxFileSize)
	}
	at := bytes.Index(data, []byte(Marker))
	if at < 0 {
		return nil, fmt.Errorf("marker %q not found: not a PVE apidoc.js", Marker)
	}
	start := at + len(Marker) - 1 // the '['
	dec := jsontext.NewDecoder(bytes.NewBuffer(data[start:]))
	var nodes []*rawNode
	if err := json.UnmarshalDecode(dec, &nodes, newParamDecoder().options()); err != nil {
		return nil, describeDecodeError(data, start, err)
	}
	if len(nodes) == 0 {
		return nil, errors.New("schema array is empty")
	}
	return nodes, nil
}

// describeDecodeError turns a decoder error into a message with the place
// in the file, and says plainly when the array was cut short.
func describeDecodeError(data []byte, start int, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("schema array is truncated: the file ends before the array closes")
	}
	offset := int64(-1)
	var semErr *json.SemanticError
	var synErr *jsontext.SyntacticError
	switch {
	case errors.As(err, &semErr):
		offset = semErr.ByteOffset
	case errors.As(err, &synErr):
		offset = synErr.ByteOffset
	}
	if offset < 0 {
		return fmt.Errorf("schema array: %w", err)
	}
	abs := int64(start) + offset
	line := 1 + bytes.Count(data[:min(abs, int64(len(data)))], []byte{'\n'})
	return fmt.Errorf("schema array is not valid (byte %d, line %d): %w", abs, line, err)
}
