package rows

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flowerrun/flower/internal/transcripttest"
)

// uuidByUnmarshal is how the stores read an entry's uuid before uuidOf:
// the reference uuidOf must agree with.
func uuidByUnmarshal(obj []byte) string {
	var id struct {
		UUID json.RawMessage `json:"uuid"`
	}
	if json.Unmarshal(obj, &id) != nil {
		return "<invalid>"
	}
	var uid string
	if len(id.UUID) > 0 && id.UUID[0] == '"' && json.Unmarshal(id.UUID, &uid) == nil {
		return uid
	}
	return ""
}

func TestUUIDOfReadsTheKeyAsEncodingJSONDoes(t *testing.T) {
	cases := []string{
		`{}`,
		`{"uuid":"a"}`,
		`{"type":"user","uuid":"a-b-c","message":{"uuid":"nested","content":[{"uuid":"deeper"}]}}`,
		`{"message":{"uuid":"nested only"}}`,
		`{"uuid":"first","type":"user","uuid":"second"}`,
		`{"uuid":"first","uuid":7}`,
		`{"uuid":7,"uuid":"last"}`,
		`{"UUID":"upper"}`,
		`{"uuid":"lower","UUID":"upper"}`,
		`{"UUID":"upper","uuid":"lower"}`,
		`{"Uuid":"mixed"}`,
		`{"u\u0075id":"escaped key"}`,
		`{"uuid":"escaped \"value\" \u00e9 \\ end"}`,
		`{"uuid":null}`,
		`{"uuid":["a"]}`,
		`{"uuid":{"uuid":"x"}}`,
		`{"uuid":""}`,
		`{"a":"}{][\"","uuid":"after tricky string"}`,
		`{"n":-1.5e+10,"t":true,"f":false,"z":null,"uuid":"after scalars"}`,
		`{"a":[[],[{}],{"b":[1,2,{"c":"]"}]}],"uuid":"after nesting"}`,
		`{"uuid":"世界 🌸"}`,
		"{\"uuid\":\"\xff\xfe not UTF-8\"}",
		`{"uuıd":"dotless i"}`,
		`{"uuid ":"trailing space"}`,
	}
	for _, seed := range []int64{1, 7} {
		for _, e := range transcripttest.Generate(300, seed) {
			cases = append(cases, string(e))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 { // random keys and values around a uuid
		var parts []string
		for range 1 + rng.IntN(6) {
			key := []string{"uuid", "UUID", "uUiD", "id", "u\\u0075id", "type", "uuidx"}[rng.IntN(7)]
			val := []string{`"v1"`, `"v\"2"`, `3`, `null`, `{"uuid":"in"}`, `["uuid"]`, `"\\"`}[rng.IntN(7)]
			parts = append(parts, fmt.Sprintf(`"%s":%s`, key, val))
		}
		cases = append(cases, "{"+strings.Join(parts, ",")+"}")
	}
	for _, c := range cases {
		rows, err := Prepare("p/s", []json.RawMessage{json.RawMessage(c)})
		if err != nil {
			t.Fatalf("Prepare(%s): %v", c, err)
		}
		if got, want := rows[0].UUID, uuidByUnmarshal(rows[0].Payload); got != want {
			t.Errorf("uuid of %s = %q, encoding/json reads %q", c, got, want)
		}
	}
}

// BenchmarkPrepare is the check and compaction an append costs per batch
// of the mirror's size.
func BenchmarkPrepare(b *testing.B) {
	entries := transcripttest.Generate(500, 7)
	b.ResetTimer()
	for range b.N {
		if _, err := Prepare("p/s", entries); err != nil {
			b.Fatal(err)
		}
	}
}
