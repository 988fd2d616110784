package tools

import (
	"bytes"
	"errors"

	"github.com/go-json-experiment/json/jsontext"
)

// returnShape reads a PVE return schema for tolerant: the object as
// encoding/json would decode it into a map, but with only what tolerant
// reads of it (type, the objects among properties, items), and nothing
// below the depth at which tolerant stops. Decoding each endpoint's whole
// return schema into maps was most of a tool set's rebuild. A value that
// is not an object (or null) is an error, as it is for json.Unmarshal
// into a map.
func returnShape(ret []byte) (map[string]any, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(ret), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if dec.PeekKind() == 'n' {
		_, err := dec.ReadToken()
		return nil, err
	}
	return readShape(dec, 0)
}

// errNotObject: a return schema that is not a JSON object.
var errNotObject = errors.New("not a JSON object")

// readShape reads one schema object at the given depth of tolerant.
// Keys repeat as in encoding/json: the last one wins, and a type,
// properties or items of another kind than tolerant reads removes the
// one before it.
func readShape(dec *jsontext.Decoder, depth int) (map[string]any, error) {
	if tok, err := dec.ReadToken(); err != nil {
		return nil, err
	} else if tok.Kind() != '{' {
		return nil, errNotObject
	}
	out := map[string]any{}
	if depth > 2 { // tolerant reads nothing of it
		return out, skipRest(dec)
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		switch key := name.String(); key {
		case "type":
			err = readType(dec, out)
		case "properties":
			err = readProperties(dec, out, depth)
		case "items":
			err = readSub(dec, out, key, depth+1)
		default:
			err = dec.SkipValue()
		}
		if err != nil {
			return nil, err
		}
	}
	_, err := dec.ReadToken()
	return out, err
}

func readType(dec *jsontext.Decoder, out map[string]any) error {
	if dec.PeekKind() != '"' {
		delete(out, "type")
		return dec.SkipValue()
	}
	tok, err := dec.ReadToken()
	if err == nil {
		out["type"] = tok.String()
	}
	return err
}

// readSub reads a member that tolerant reads only as an object.
func readSub(dec *jsontext.Decoder, out map[string]any, key string, depth int) error {
	if dec.PeekKind() != '{' {
		delete(out, key)
		return dec.SkipValue()
	}
	m, err := readShape(dec, depth)
	if err == nil {
		out[key] = m
	}
	return err
}

// readProperties keeps the members of properties that are objects.
func readProperties(dec *jsontext.Decoder, out map[string]any, depth int) error {
	if dec.PeekKind() != '{' {
		delete(out, "properties")
		return dec.SkipValue()
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	props := map[string]any{}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if err := readSub(dec, props, name.String(), depth+1); err != nil {
			return err
		}
	}
	out["properties"] = props
	_, err := dec.ReadToken()
	return err
}

// skipRest skips the members of an object whose '{' is read.
func skipRest(dec *jsontext.Decoder) error {
	for dec.PeekKind() != '}' {
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		if err := dec.SkipValue(); err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return err
}
