package engine

import (
	_ "embed" // the helpers' R source
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kernel-mcp/kernel-mcp/kernel"
)

// R run silently in an R (IRkernel) session's kernel by get_value and
// list_variables: the same arguments and the same reply as their Python
// versions. The source lives in r/*.R, real R files that are unit-tested
// on their own (TestRHelpers), and is embedded here as it is.
//
// A helper runs as local({...}) in an environment whose parent is base R's,
// so its names live there, nothing is defined in the user's global
// environment, and a user's function masking a base one (length, format)
// is not the one the helper calls; the
// execute is silent, so IRkernel neither counts it nor sends what it
// prints. It answers with one display_data of ResultMIME, whose value
// IRkernel sends as a JSON string.

var (
	//go:embed r/prelude.R
	rPrelude string
	//go:embed r/get_value.R
	rGetValueSrc string
	//go:embed r/list_variables.R
	rListVariablesSrc string
)

// rHelpers holds the R version of each Python helper that has one; the
// other helpers need a Python kernel.
var rHelpers = map[string]string{
	PyGetValue:      rPrelude + rGetValueSrc,
	PyListVariables: rPrelude + rListVariablesSrc,
}

// rCall is the code that runs R helper src with args (JSON). An error the
// helper stops with is replied as {"km_error": message}: IRkernel keeps a
// silent execute's errors to itself.
func rCall(src string, args []byte) string {
	return "local({\n.km_args <- " + RString(string(args)) + "\ntryCatch({\n" + src + "\n}, error = function(e) {\n" +
		"  bundle <- list()\n" +
		"  bundle[[" + RString(ResultMIME) + "]] <- as.character(jsonlite::toJSON(list(km_error = conditionMessage(e)), auto_unbox = TRUE))\n" +
		"  IRdisplay::publish_mimebundle(bundle)\n" +
		"})\n}, envir = new.env(parent = baseenv()))\n"
}

// RString quotes s as an R string literal. Control characters are written
// as \xhh, not \u: R refuses a literal over 10,000 characters holding \u
// escapes in a locale that is not UTF-8. Other characters stay as they are
// (the code reaches R as UTF-8).
func RString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// rResult is the JSON an R helper replied with: IRkernel sends it as a
// JSON string; a JSON object (as the protocol has it) is taken as well, and
// either is checked for the helper's error reply.
func rResult(raw json.RawMessage) (json.RawMessage, error) {
	var body []byte
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		body = []byte(s)
	} else if json.Valid(raw) {
		body = raw
	} else {
		return nil, fmt.Errorf("bad reply from the R kernel: %v", err)
	}
	if !json.Valid(body) {
		return nil, fmt.Errorf("bad reply from the R kernel: not JSON: %.200q", body)
	}
	var failed struct {
		Error *string `json:"km_error"`
	}
	if json.Unmarshal(body, &failed) == nil && failed.Error != nil {
		return nil, &PyError{EName: "Error", EValue: *failed.Error}
	}
	return json.RawMessage(body), nil
}

//go:embed r/session_status.R
var rStatusSrc string

// StatusProbeCode is session_status's probe for a kernel of language
// lang, "" for a language that has none.
func StatusProbeCode(lang string) string {
	switch {
	case lang == "" || lang == "python":
		return StatusProbe
	case strings.EqualFold(lang, "R"):
		return rCall(rPrelude+rStatusSrc, []byte(`{}`))
	}
	return ""
}

// StatusProbeReply is the JSON the probe of StatusProbeCode answered with
// in res: the line the Python probe prints, the reply of the R one.
func StatusProbeReply(lang string, res *kernel.ExecuteResult) []byte {
	if !strings.EqualFold(lang, "R") {
		return []byte(StreamText(res, "stdout"))
	}
	for _, o := range res.Outputs {
		if raw, ok := o.Data[ResultMIME]; ok {
			if v, err := rResult(raw); err == nil {
				return v
			}
		}
	}
	return nil
}
