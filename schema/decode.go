package schema

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// paramDecoder decodes the parameter schemas of apidoc.js straight into
// Params, token by token: parameters are most of the file, and decoding
// them without reflection or an intermediate copy keeps a reload fast. It
// interns strings: the same descriptions, type texts and format names recur
// thousands of times, and one copy of each keeps the registry small.
type paramDecoder struct {
	strs map[string]string
}

func newParamDecoder() *paramDecoder {
	return &paramDecoder{strs: make(map[string]string, 4096)}
}

// options makes json.UnmarshalDecode use this decoder for every *Param.
func (pd *paramDecoder) options() json.Options {
	return json.WithUnmarshalers(json.UnmarshalFromFunc(pd.decode))
}

// decode reads one parameter schema. Unknown keys are skipped; the
// normalizer completes the Param afterwards.
func (pd *paramDecoder) decode(dec *jsontext.Decoder, p *Param) error {
	if err := expectDelim(dec, '{', "parameter schema"); err != nil {
		return err
	}
	for dec.PeekKind() != '}' {
		// The raw name is only valid until the next read: switch on it
		// without copying, copy it only to report an error.
		raw, err := dec.ReadValue()
		if err != nil {
			return err
		}
		if err := pd.field(dec, p, raw); err != nil {
			return fmt.Errorf("%s: %w", raw.String(), err)
		}
	}
	_, err := dec.ReadToken()
	return err
}

func (pd *paramDecoder) field(dec *jsontext.Decoder, p *Param, rawName jsontext.Value) error {
	var err error
	switch string(rawName) { // quoted as in the file; PVE never escapes key names

	case `"type"`:
		p.Type, err = pd.str(dec)
	case `"format"`:
		err = pd.format(dec, p)
	case `"optional"`:
		p.Optional, err = readFlag(dec)
	case `"enum"`:
		p.Enum, err = pd.scalars(dec)
	case `"minimum"`:
		p.Minimum, err = readNumber(dec)
	case `"maximum"`:
		p.Maximum, err = readNumber(dec)
	case `"minLength"`:
		p.MinLength, err = readCount(dec)
	case `"maxLength"`:
		p.MaxLength, err = readCount(dec)
	case `"pattern"`:
		p.Pattern, err = pd.str(dec)
	case `"typetext"`:
		p.TypeText, err = pd.str(dec)
	case `"default"`:
		var v jsontext.Value
		v, err = dec.ReadValue()
		p.Default = v.Clone()
	case `"description"`:
		p.Description, err = pd.str(dec)
	case `"verbose_description"`:
		p.VerboseDescription, err = pd.str(dec)
	case `"format_description"`:
		p.FormatDescription, err = pd.str(dec)
	case `"title"`:
		p.Title, err = pd.str(dec)
	case `"requires"`:
		if dec.PeekKind() == '"' {
			p.Requires, err = pd.str(dec)
		} else {
			err = dec.SkipValue() // a schema-valued requires: PVE checks it
		}
	case `"items"`:
		p.Items = new(Param)
		err = json.UnmarshalDecode(dec, p.Items)
	case `"oneOf"`:
		err = json.UnmarshalDecode(dec, &p.OneOf)
	case `"instance-types"`:
		err = json.UnmarshalDecode(dec, &p.InstanceTypes)
	case `"type-property"`:
		p.TypeProperty, err = pd.str(dec)
	case `"alias"`:
		p.Alias, err = pd.str(dec)
	case `"keyAlias"`:
		p.KeyAlias, err = pd.str(dec)
	case `"default_key"`:
		p.DefaultKey, err = readFlag(dec)
	default:
		err = dec.SkipValue()
	}
	return err
}

// decodeFormat reads a named format or a property string's sub-keys.
func (pd *paramDecoder) format(dec *jsontext.Decoder, p *Param) error {
	switch dec.PeekKind() {
	case '"':
		var err error
		p.Format, err = pd.str(dec)
		return err
	case '{':
		keys := map[string]*Param{}
		if err := json.UnmarshalDecode(dec, &keys); err != nil {
			return err
		}
		p.Properties = &PropertyFormat{byName: keys}
		return nil
	case 'n':
		_, err := dec.ReadToken()
		return err
	}
	return fmt.Errorf("must be a string or an object, not %v", dec.PeekKind())
}

func expectDelim(dec *jsontext.Decoder, delim jsontext.Kind, what string) error {
	if k := dec.PeekKind(); k != delim {
		return fmt.Errorf("%s must be an object, not %v", what, k)
	}
	_, err := dec.ReadToken()
	return err
}

// str reads a string, interned; null reads as "".
func (pd *paramDecoder) str(dec *jsontext.Decoder) (string, error) {
	raw, err := dec.ReadValue()
	if err != nil {
		return "", err
	}
	switch raw.Kind() {
	case '"':
		return pd.intern(raw)
	case 'n':
		return "", nil
	}
	return "", fmt.Errorf("must be a string, not %v", raw.Kind())
}

// intern returns the one copy of a quoted JSON string. Strings without
// escapes are looked up without allocating; others are unquoted first.
func (pd *paramDecoder) intern(raw jsontext.Value) (string, error) {
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		if s, ok := pd.strs[string(body)]; ok {
			return s, nil
		}
		s := string(body)
		pd.strs[s] = s
		return s, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	if prev, ok := pd.strs[s]; ok {
		return prev, nil
	}
	pd.strs[s] = s
	return s, nil
}

// readFlag reads PVE's boolean spellings: 0/1, "0"/"1", true/false, null.
func readFlag(dec *jsontext.Decoder) (bool, error) {
	var f pveFlag
	err := f.UnmarshalJSONFrom(dec)
	return bool(f), err
}

// readNumber reads a bound given as a number or a numeric string.
func readNumber(dec *jsontext.Decoder) (*float64, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	var v float64
	switch tok.Kind() {
	case '0':
		v, err = tok.Float()
	case '"':
		v, err = strconv.ParseFloat(tok.String(), 64)
		if err != nil {
			return nil, fmt.Errorf("bound %q is not a number", tok.String())
		}
	case 'n':
		return nil, nil
	default:
		return nil, fmt.Errorf("bound must be a number, not %v", tok.Kind())
	}
	return &v, err
}

// readCount reads a length bound.
func readCount(dec *jsontext.Decoder) (*int, error) {
	f, err := readNumber(dec)
	if f == nil || err != nil {
		return nil, err
	}
	n := int(*f)
	return &n, nil
}

// scalars reads an enum: an array of strings or numbers, or null.
func (pd *paramDecoder) scalars(dec *jsontext.Decoder) ([]string, error) {
	if dec.PeekKind() == 'n' {
		_, err := dec.ReadToken()
		return nil, err
	}
	if dec.PeekKind() != '[' {
		return nil, fmt.Errorf("enum must be an array, not %v", dec.PeekKind())
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	var out []string
	for dec.PeekKind() != ']' {
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		switch raw.Kind() {
		case '"':
			s, err := pd.intern(raw)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		case '0':
			out = append(out, string(raw))
		default:
			return nil, fmt.Errorf("enum value must be a string or a number, not %v", raw.Kind())
		}
	}
	_, err := dec.ReadToken()
	return out, err
}
