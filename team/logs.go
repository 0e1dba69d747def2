package team

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"

	"github.com/flowerrun/flower/internal/gitwork"
	"github.com/flowerrun/flower/store/postgres"
)

// LogFormats are the formats of a worker's log (--log-format).
var LogFormats = []string{"text", "json"}

// NewLogHandler is a worker's log handler writing to out in format (one of
// LogFormats): one line per record, every line folded and masked (see
// MaskHandler). An unknown format is an error naming the formats.
func NewLogHandler(out io.Writer, format string) (slog.Handler, error) {
	switch format {
	case "text":
		return MaskHandler(slog.NewTextHandler(out, nil)), nil
	case "json":
		return MaskHandler(slog.NewJSONHandler(out, nil)), nil
	}
	return nil, fmt.Errorf("unknown log format %q: give %s", format, strings.Join(LogFormats, " or "))
}

// maskHandler hands on records whose message and attributes, every string
// and error among them, are on one line and show no secret: a log line is
// read by whoever reads the machine's logs (a log shipper, a colleague),
// who must not get the database's password or the model's key from it, and
// a record spread over lines (River's errors, pgx's every address tried)
// breaks a collector that reads one record a line.
type maskHandler struct {
	inner   slog.Handler
	secrets []string // exact values masked wherever they appear (the worker's own)
}

// MaskHandler wraps h so that what it writes is folded on one line and
// masked: URLs' passwords and tokens, password= settings, sk-ant- keys and
// bearer tokens.
func MaskHandler(h slog.Handler) slog.Handler { return &maskHandler{inner: h} }

// withSecrets is h masking secrets too (values shorter than 4 characters
// are too common to mask).
func withSecrets(h slog.Handler, secrets []string) slog.Handler {
	var keep []string
	for _, s := range secrets {
		if len(s) >= 4 && !slices.Contains(keep, s) {
			keep = append(keep, s)
		}
	}
	// Longest first: a secret that holds another is masked whole.
	slices.SortFunc(keep, func(a, b string) int { return len(b) - len(a) })
	if m, ok := h.(*maskHandler); ok {
		return &maskHandler{inner: m.inner, secrets: append(slices.Clone(m.secrets), keep...)}
	}
	return &maskHandler{inner: h, secrets: keep}
}

func (h *maskHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h *maskHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.clean(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h *maskHandler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = h.attr(a)
	}
	return &maskHandler{inner: h.inner.WithAttrs(clean), secrets: h.secrets}
}

func (h *maskHandler) WithGroup(name string) slog.Handler {
	return &maskHandler{inner: h.inner.WithGroup(name), secrets: h.secrets}
}

// attr is a with every string in it folded and masked; other values
// (numbers, times, durations) are kept as they are.
func (h *maskHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.clean(v.String()))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, ga := range g {
			clean[i] = h.attr(ga)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.clean(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, h.clean(x.String()))
		case []string:
			clean := make([]string, len(x))
			for i, s := range x {
				clean[i] = h.clean(s)
			}
			return slog.Any(a.Key, clean)
		case []byte:
			return slog.String(a.Key, h.clean(string(x)))
		}
		// Anything else is written as the handler prints it: masked in
		// its printed form.
		return slog.String(a.Key, h.clean(fmt.Sprintf("%+v", v.Any())))
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// clean is s folded on one line and masked.
func (h *maskHandler) clean(s string) string {
	return foldLines(maskText(s, h.secrets))
}

// logMask stands where a log line held a secret.
const logMask = "xxxxx"

var (
	// urlInText is an address with a scheme inside free text.
	urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)
	// passwordSetting is a password given as key=value (a libpq
	// connection string, a query, an environment line).
	passwordSetting = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s&,;]+)`)
	// anthropicKey is an Anthropic API key (sk-ant-api03-…, sk-ant-oat01-…).
	anthropicKey = regexp.MustCompile(`sk-ant-[A-Za-z0-9_\-]+`)
	// bearerToken is an HTTP authorization's token.
	bearerToken = regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=\-]+`)
	// apiKeyHeader is the x-api-key header with its value.
	apiKeyHeader = regexp.MustCompile(`(?i)(x-api-key["']?\s*[:=]\s*["']?)[^\s"',;]+`)
)

// maskText is s with every secret it holds replaced by xxxxx: the exact
// values given, the password or token of every URL (as the database's and
// the repositories' addresses are masked everywhere else: postgres.Redact,
// gitwork.Redact), password settings, Anthropic keys and bearer tokens.
func maskText(s string, secrets []string) string {
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, logMask)
	}
	s = urlInText.ReplaceAllStringFunc(s, func(u string) string { return gitwork.Redact(postgres.Redact(u)) })
	s = passwordSetting.ReplaceAllString(s, "${1}"+logMask)
	s = anthropicKey.ReplaceAllString(s, "sk-ant-"+logMask)
	s = bearerToken.ReplaceAllString(s, "${1}"+logMask)
	s = apiKeyHeader.ReplaceAllString(s, "${1}"+logMask)
	return s
}

// foldLines puts a text of several lines on one: its lines trimmed, the
// empty ones and repeats dropped (pgx says the same refusal once for each
// address it tried), joined by " | ".
func foldLines(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	var parts []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(parts, l) {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " | ")
}
