package store

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"github.com/flowerrun/flower/internal/transcripttest"
)

// A resume decodes every stored entry; what it allocates beyond decoding
// the entries themselves is paid on every resume of a long session. Decoding
// each row with a Decoder of its own regrew that Decoder's buffer from 512
// bytes for every row: about 1.75 times what decoding the same rows with
// json.Unmarshal allocates. The budget is on bytes allocated, which do not
// depend on the machine's speed or load.
func TestDecodeTranscriptAllocatesLittleBeyondTheEntries(t *testing.T) {
	rows := transcripttest.Generate(3000, 11)
	unmarshal := allocated(func() {
		for _, r := range rows {
			var m map[string]any
			if err := json.Unmarshal(r, &m); err != nil {
				t.Fatal(err)
			}
		}
	})
	decode := allocated(func() {
		if _, bad := decodeTranscript(rows); bad != nil {
			t.Fatal(bad)
		}
	})
	if ratio := float64(decode) / float64(unmarshal); ratio > 1.3 {
		t.Errorf("decodeTranscript allocated %d bytes, %.2f× json.Unmarshal's %d for the same rows; want at most 1.3×", decode, ratio, unmarshal)
	}
}

func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Rows decoded as one stream must come out as each row alone does: the
// same objects, the same refusals, whatever comes before or after a row
// (a row that is cut, one that only a neighbour completes, trailing
// data, blanks, what is not an object).
func TestDecodeTranscriptAsEachRowAlone(t *testing.T) {
	rows := []json.RawMessage{
		json.RawMessage(`{"type":"user","n":12345678901234567890,"f":1.50}`),
		json.RawMessage(`  {"type":"a"}  `),
		json.RawMessage(`{"type":"cut","x":"abc`),
		json.RawMessage(`def"}`),
		json.RawMessage(`{"type":"ok"}`),
		json.RawMessage(`{"type":"two"} {"x":1}`),
		json.RawMessage(`{"type":"after"}`),
		json.RawMessage(`{"type":"junk"} junk`),
		json.RawMessage(`["a"]`),
		json.RawMessage(``),
		json.RawMessage(`{"type":"open",`),
		json.RawMessage(`"k":1}`),
		json.RawMessage(`{"type":"nested","m":{"content":[{"type":"text","text":"\u00e9\n"}]}}`),
		json.RawMessage(`{}`),
		json.RawMessage(`{"type":"last"}`),
	}
	for rep := 0; rep < 300; rep++ { // enough rows for every worker
		rows = append(rows, json.RawMessage(fmt.Sprintf(`{"type":"user","uuid":"u%d"}`, rep)))
		if rep%50 == 7 {
			rows = append(rows, json.RawMessage(`{"unterminated":"`), json.RawMessage(`x"}`))
		}
	}
	es, bad := decodeTranscript(rows)
	for i, r := range rows {
		want, werr := decodeEntryObject(r)
		if string(es[i].raw) != string(r) {
			t.Fatalf("row %d: entry holds %q", i, es[i].raw)
		}
		if gerr := bad[i]; (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Errorf("row %d %q: error %v, alone %v", i, r, gerr, werr)
		}
		if !reflect.DeepEqual(es[i].obj, want) {
			t.Errorf("row %d %q: decoded %#v, alone %#v", i, r, es[i].obj, want)
		}
	}
}

// The unchanged entries a load returns share one allocation: each must
// still be a copy of its own, which neither the base's rows nor an append
// to its neighbour can change.
func TestEncodeTranscriptCopiesStayApart(t *testing.T) {
	rows := []json.RawMessage{json.RawMessage(`{"a":1}`), json.RawMessage(`{"b":2}`), json.RawMessage(`{"c":3}`)}
	es, _ := decodeTranscript(rows)
	es[1].dropped = true
	out, err := encodeTranscript(es)
	if err != nil || len(out) != 2 {
		t.Fatalf("encode = %q, %v", out, err)
	}
	_ = append(out[0], `XXXX`...)
	rows[2][2] = 'Z'
	if string(out[0]) != `{"a":1}` || string(out[1]) != `{"c":3}` {
		t.Errorf("copies changed: %q", out)
	}
}
