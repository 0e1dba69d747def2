package claude

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// decodeObject decodes a JSON object keeping numbers as json.Number. An empty
// input gives an empty map.
func decodeObject(raw json.RawMessage) (map[string]any, error) {
	m := map[string]any{}
	if len(bytes.TrimSpace(raw)) == 0 {
		return m, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode JSON object: %w", err)
	}
	return m, nil
}
