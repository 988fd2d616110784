package transport

import (
	"encoding/json"
	"strings"
	"testing"
)

// idOfDecoded is how idOf read a message before it scanned the top level:
// the whole line decoded by encoding/json. It is the oracle idOf must
// agree with on every line.
func idOfDecoded(line []byte) (id string, request, answer bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 || string(m.ID) == "null" {
		return "", false, false
	}
	var v any
	if json.Unmarshal(m.ID, &v) != nil {
		return "", false, false
	}
	canon, _ := json.Marshal(v)
	return string(canon), m.Method != "", m.Method == ""
}

// idLines are messages whose reading differs if any rule of encoding/json
// is missed: case, repeats, types, escapes, numbers, what may follow.
var idLines = []string{
	`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id": "a" ,"result":{}}`,
	`{"jsonrpc":"2.0","id":null,"error":{}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`not json`,
	``,
	`[1]`,
	`null`,
	`{"ID":7,"Method":"x"}`,
	`{"id":1,"id":2}`,
	`{"id":1,"ID":"b"}`,
	`{"id":1,"method":"x","method":""}`,
	`{"id":1,"method":"x","method":null}`,
	`{"id":1,"method":3}`,
	`{"id":1,"method":{"a":1}}`,
	`{"id":1.0}`,
	`{"id":1e2}`,
	`{"id":-0}`,
	`{"id":007}`,
	`{"id":12345678901234567890}`,
	`{"id":123456789012345}`,
	`{"id":"<&>"}`,
	`{"id":"\u0041"}`,
	`{"id":"é"}`,
	"{\"id\":\"\xff\"}",
	`{"id":"a\"b"}`,
	`{"id":true}`,
	`{"id":[1,{"b":2}]}`,
	`{"id":{}}`,
	`{"id":1}  `,
	`{"id":1} x`,
	`{"id":1}{"id":2}`,
	`{"id":1,"result":{"content":[{"type":"text","text":"a\nb"}]}}`,
	`{"id":1,"result":[1,2,}`,
	`{"id":1,"result":`,
	`  {"id" : 5 , "method" : "tools/call" }`,
}

func TestIdOfReadsAsEncodingJSON(t *testing.T) {
	for _, line := range idLines {
		id, req, ans := idOf([]byte(line))
		wid, wreq, wans := idOfDecoded([]byte(line))
		if id != wid || req != wreq || ans != wans {
			t.Errorf("idOf(%s) = %q %v %v, encoding/json reads %q %v %v", line, id, req, ans, wid, wreq, wans)
		}
	}
}

// FuzzIdOf: the client's lines cross a trust boundary; whatever they hold,
// idOf reads them as encoding/json does.
func FuzzIdOf(f *testing.F) {
	for _, line := range idLines {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		id, req, ans := idOf(line)
		wid, wreq, wans := idOfDecoded(line)
		if id != wid || req != wreq || ans != wans {
			t.Errorf("idOf(%q) = %q %v %v, encoding/json reads %q %v %v", line, id, req, ans, wid, wreq, wans)
		}
	})
}

// BenchmarkIdOf: the id of an answer of about 4 KiB, as drain reads every
// line the server writes.
func BenchmarkIdOf(b *testing.B) {
	text := strings.Repeat(`{\"vmid\":100,\"status\":\"running\",\"name\":\"web\"},`, 80)
	line := []byte(`{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"` + text + `"}],"structuredContent":{"n":80}}}`)
	for _, impl := range []struct {
		name string
		f    func([]byte) (string, bool, bool)
	}{{"scan", idOf}, {"decode", idOfDecoded}} {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if id, _, ans := impl.f(line); id != "42" || !ans {
					b.Fatal(id, ans)
				}
			}
		})
	}
}
