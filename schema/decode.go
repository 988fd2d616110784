package schema

import (
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// UnmarshalJSONFrom decodes one parameter schema of apidoc.js straight into
// a Param, token by token: parameters are most of the file, and decoding
// them without reflection or an intermediate copy keeps a reload fast.
// Unknown keys are skipped; the normalizer completes the Param afterwards.
func (p *Param) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
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
		if err := p.decodeField(dec, raw); err != nil {
			return fmt.Errorf("%s: %w", raw.String(), err)
		}
	}
	_, err := dec.ReadToken()
	return err
}

func (p *Param) decodeField(dec *jsontext.Decoder, rawName jsontext.Value) error {
	var err error
	switch string(rawName) { // quoted as in the file; PVE never escapes key names

	case `"type"`:
		p.Type, err = readString(dec)
	case `"format"`:
		err = p.decodeFormat(dec)
	case `"optional"`:
		p.Optional, err = readFlag(dec)
	case `"enum"`:
		p.Enum, err = readScalars(dec)
	case `"minimum"`:
		p.Minimum, err = readNumber(dec)
	case `"maximum"`:
		p.Maximum, err = readNumber(dec)
	case `"minLength"`:
		p.MinLength, err = readCount(dec)
	case `"maxLength"`:
		p.MaxLength, err = readCount(dec)
	case `"pattern"`:
		p.Pattern, err = readString(dec)
	case `"typetext"`:
		p.TypeText, err = readString(dec)
	case `"default"`:
		var v jsontext.Value
		v, err = dec.ReadValue()
		p.Default = v.Clone()
	case `"description"`:
		p.Description, err = readString(dec)
	case `"verbose_description"`:
		p.VerboseDescription, err = readString(dec)
	case `"format_description"`:
		p.FormatDescription, err = readString(dec)
	case `"title"`:
		p.Title, err = readString(dec)
	case `"requires"`:
		if dec.PeekKind() == '"' {
			p.Requires, err = readString(dec)
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
		p.TypeProperty, err = readString(dec)
	case `"alias"`:
		p.Alias, err = readString(dec)
	case `"keyAlias"`:
		p.KeyAlias, err = readString(dec)
	case `"default_key"`:
		p.DefaultKey, err = readFlag(dec)
	default:
		err = dec.SkipValue()
	}
	return err
}

// decodeFormat reads a named format or a property string's sub-keys.
func (p *Param) decodeFormat(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case '"':
		var err error
		p.Format, err = readString(dec)
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

// readString reads a string; null reads as "".
func readString(dec *jsontext.Decoder) (string, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return "", err
	}
	switch tok.Kind() {
	case '"':
		return tok.String(), nil
	case 'n':
		return "", nil
	}
	return "", fmt.Errorf("must be a string, not %v", tok.Kind())
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

// readScalars reads an enum: an array of strings or numbers, or null.
func readScalars(dec *jsontext.Decoder) ([]string, error) {
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
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		switch tok.Kind() {
		case '"', '0':
			out = append(out, tok.String())
		default:
			return nil, fmt.Errorf("enum value must be a string or a number, not %v", tok.Kind())
		}
	}
	_, err := dec.ReadToken()
	return out, err
}
