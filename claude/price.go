package claude

import (
	"encoding/json"
	"regexp"
	"strings"
)

// ModelPrice is what a model charges, in US dollars per million tokens
// (WebSearch per request): the list prices the CLI reports its
// total_cost_usd with, so a sum of RequestCost over a session's requests
// is what the CLI said the session cost.
type ModelPrice struct {
	Input  float64
	Output float64
	// CacheWrite5m and CacheWrite1h are a token written to the prompt
	// cache with the 5-minute and the 1-hour lifetime.
	CacheWrite5m float64
	CacheWrite1h float64
	CacheRead    float64
	WebSearch    float64
	// LongPrompt, when set, prices a request whose prompt (input, cache
	// read and cache write tokens) is over LongPromptAbove tokens.
	LongPromptAbove int
	LongPrompt      *ModelPrice
}

// RequestUsage is one request's usage as the Messages API reports it and
// the CLI writes it into its transcripts (message.usage): the token counts
// and what else changes the price.
type RequestUsage struct {
	Usage
	// CacheCreation splits CacheCreationInputTokens by the cache's
	// lifetime; without it every write is priced as a 5-minute one.
	CacheCreation *struct {
		Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation,omitempty"`
	ServerToolUse *struct {
		WebSearchRequests int `json:"web_search_requests"`
	} `json:"server_tool_use,omitempty"`
	// InferenceGeo "us" costs 10% more on every token.
	InferenceGeo string `json:"inference_geo,omitempty"`
	// Speed "fast" is fast mode, priced as fastPrice.
	Speed string `json:"speed,omitempty"`
}

// The price tiers of the CLI's model catalog (CLI 2.1.310 and 2.1.332
// ship the same prices; 2.1.332 adds the *-5-2 models).
var (
	tier2x10     = ModelPrice{Input: 2, Output: 10, CacheWrite5m: 2.5, CacheWrite1h: 4, CacheRead: 0.2, WebSearch: 0.01}
	tier2x10r10  = ModelPrice{Input: 2, Output: 10, CacheWrite5m: 2.5, CacheWrite1h: 4, CacheRead: 0.1, WebSearch: 0.01}
	tier3x15     = ModelPrice{Input: 3, Output: 15, CacheWrite5m: 3.75, CacheWrite1h: 6, CacheRead: 0.3, WebSearch: 0.01}
	tier5x25     = ModelPrice{Input: 5, Output: 25, CacheWrite5m: 6.25, CacheWrite1h: 10, CacheRead: 0.5, WebSearch: 0.01}
	tier15x75    = ModelPrice{Input: 15, Output: 75, CacheWrite5m: 18.75, CacheWrite1h: 30, CacheRead: 1.5, WebSearch: 0.01}
	tier10x50    = ModelPrice{Input: 10, Output: 50, CacheWrite5m: 12.5, CacheWrite1h: 20, CacheRead: 1, WebSearch: 0.01}
	tier10x50r25 = ModelPrice{Input: 10, Output: 50, CacheWrite5m: 12.5, CacheWrite1h: 20, CacheRead: 0.25, WebSearch: 0.01}
	tier4x20r20  = ModelPrice{Input: 4, Output: 20, CacheWrite5m: 5, CacheWrite1h: 8, CacheRead: 0.2, WebSearch: 0.01}
	tier8x40r20  = ModelPrice{Input: 8, Output: 40, CacheWrite5m: 10, CacheWrite1h: 16, CacheRead: 0.2, WebSearch: 0.01}
	haiku35      = ModelPrice{Input: 0.8, Output: 4, CacheWrite5m: 1, CacheWrite1h: 1.6, CacheRead: 0.08, WebSearch: 0.01}
	haiku45      = ModelPrice{Input: 1, Output: 5, CacheWrite5m: 1.25, CacheWrite1h: 2, CacheRead: 0.1, WebSearch: 0.01}
	haiku55      = ModelPrice{Input: 0.1, Output: 0.5, CacheWrite5m: 0.125, CacheWrite1h: 0.2, CacheRead: 0.01, WebSearch: 0.01,
		LongPromptAbove: 100_000, LongPrompt: &ModelPrice{Input: 0.5, Output: 2.5, CacheWrite5m: 0.625, CacheWrite1h: 1, CacheRead: 0.05, WebSearch: 0.01}}
	// fastPrice is what the CLI charges a fast-mode request when the API
	// gave it no price of its own for the model.
	fastPrice = ModelPrice{Input: 30, Output: 150, CacheWrite5m: 37.5, CacheWrite1h: 60, CacheRead: 3, WebSearch: 0.01}
	// unknownPrice is the CLI's own fallback for a model it does not know.
	unknownPrice = tier5x25
)

// modelPrices are the catalog's models by id; a request names one by its
// id, its dated first-party id, a provider's id around it, or a family
// alias (modelAliases).
var modelPrices = map[string]ModelPrice{
	"claude-3-5-haiku": haiku35, "claude-haiku-4-5": haiku45, "claude-haiku-5-5": haiku55,
	"claude-3-5-sonnet": tier3x15, "claude-3-7-sonnet": tier3x15, "claude-sonnet-4-0": tier3x15, "claude-sonnet-4": tier3x15,
	"claude-sonnet-4-5": tier3x15, "claude-sonnet-4-6": tier3x15, "claude-sonnet-5": tier2x10, "claude-sonnet-5-5": tier2x10r10,
	"claude-opus-4-0": tier15x75, "claude-opus-4": tier15x75, "claude-opus-4-1": tier15x75,
	"claude-opus-4-5": tier5x25, "claude-opus-4-6": tier5x25, "claude-opus-4-7": tier5x25, "claude-opus-4-8": tier5x25,
	"claude-opus-5": tier5x25, "claude-opus-5-5": tier4x20r20,
	"claude-fable-5": tier10x50, "claude-fable-5-1": tier10x50r25, "claude-fable-5-2": tier8x40r20,
	"claude-mythos-5": tier10x50, "claude-mythos-5-1": tier10x50r25, "claude-mythos-5-2": tier8x40r20,
}

// modelAliases are the CLI's family aliases and the models they name.
var modelAliases = map[string]string{
	"opus": "claude-opus-5-5", "sonnet": "claude-sonnet-5-5", "haiku": "claude-haiku-5-5", "fable": "claude-fable-5-2",
}

// modelTail is what may follow a catalog id in a model's name: a date
// (claude-opus-4-1-20250805), a Vertex version (@20250805), a Bedrock
// version (-v1:0), a context suffix ([1m]).
var modelTail = regexp.MustCompile(`^(-\d{8})?(@[\w.-]*)?(-v\d+(:\d+)?)?(\[[^\]]*\])?$`)

// PriceOf is the price of model, false when the catalog does not know it.
func PriceOf(model string) (ModelPrice, bool) {
	name := strings.ToLower(strings.TrimSpace(model))
	if a, ok := modelAliases[strings.TrimSuffix(name, "[1m]")]; ok {
		name = a
	}
	best := ""
	for id := range modelPrices {
		i := strings.Index(name, id)
		if i < 0 || len(id) <= len(best) || !modelTail.MatchString(name[i+len(id):]) {
			continue
		}
		// A provider's prefix (us.anthropic., anthropic.) ends in a dot.
		if i > 0 && name[i-1] != '.' && name[i-1] != '/' {
			continue
		}
		best = id
	}
	if best == "" {
		return unknownPrice, false
	}
	return modelPrices[best], true
}

// Cost is what one request of usage u costs at p, in US dollars.
func (p ModelPrice) Cost(u RequestUsage) float64 {
	if p.LongPrompt != nil && u.Context() > p.LongPromptAbove {
		long := *p.LongPrompt
		long.WebSearch = p.WebSearch
		p = long
	}
	write := float64(u.CacheCreationInputTokens)
	oneHour := 0.0
	if u.CacheCreation != nil {
		oneHour = float64(min(max(u.CacheCreation.Ephemeral1h, 0), u.CacheCreationInputTokens))
	}
	tokens := float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadInputTokens)*p.CacheRead + (write-oneHour)*p.CacheWrite5m + oneHour*p.CacheWrite1h
	cost := tokens / 1e6
	if u.InferenceGeo == "us" {
		cost *= 1.1
	}
	if u.ServerToolUse != nil {
		cost += float64(u.ServerToolUse.WebSearchRequests) * p.WebSearch
	}
	return cost
}

// RequestCost is what one request to model with usage u cost, in US
// dollars, as the CLI counts it; known is false when the model is not in
// the catalog (then priced as the CLI prices an unknown model).
func RequestCost(model string, u RequestUsage) (cost float64, known bool) {
	p, known := PriceOf(model)
	if u.Speed == "fast" {
		p = fastPrice
	}
	return p.Cost(u), known
}

// TranscriptRequest is one model request that a transcript line records:
// an assistant line's message id, model and usage.
type TranscriptRequest struct {
	MessageID string
	Model     string
	Usage     RequestUsage
}

// ReadTranscriptRequest reads the request a transcript entry records; false
// when the entry is not an assistant message with an id and usage. The CLI
// writes one message's content blocks as several entries that carry the
// same message id and usage: count a request once per MessageID.
func ReadTranscriptRequest(entry json.RawMessage) (TranscriptRequest, bool) {
	var e struct {
		Type    string `json:"type"`
		Message *struct {
			ID    string        `json:"id"`
			Model string        `json:"model"`
			Usage *RequestUsage `json:"usage"`
		} `json:"message"`
	}
	if json.Unmarshal(entry, &e) != nil || e.Type != "assistant" || e.Message == nil || e.Message.ID == "" || e.Message.Usage == nil {
		return TranscriptRequest{}, false
	}
	return TranscriptRequest{MessageID: e.Message.ID, Model: e.Message.Model, Usage: *e.Message.Usage}, true
}
