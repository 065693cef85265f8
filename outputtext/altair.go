package outputtext

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"golang.org/x/net/html"
)

// Altair's default renderer outside JupyterLab sends no Vega-Lite MIME
// type, only text/html: a <script> that loads vega-embed from a CDN and
// calls it with the spec inline, in its "universal" template
//
//	(function(spec, embedOpt){ ... vegaEmbed(outputDiv, spec, embedOpt) ... })({...spec...}, {"mode": "vega-lite"});
//
// and text/plain "alt.Chart(...)". embeddedVegaLite takes the spec out of
// such a script, so the chart is summarized like a Vega-Lite output.

// vegaLiteSchemaRE reads the major version from a Vega-Lite $schema URL.
var vegaLiteSchemaRE = regexp.MustCompile(`^https://vega\.github\.io/schema/vega-lite/v(\d+)[.\d]*\.json$`)

// maxEmbeddedHTML bounds the HTML searched for an embedded spec (a spec is
// inline data, so it can be large, but not without bound).
const maxEmbeddedHTML = 64 << 20

// embeddedVegaLite returns the Vega-Lite spec of an Altair HTML output, and
// the MIME type it would have had, or false.
func embeddedVegaLite(htmlText string) (spec json.RawMessage, mime string, ok bool) {
	if len(htmlText) > maxEmbeddedHTML || !strings.Contains(htmlText, "vegaEmbed(") {
		return nil, "", false
	}
	z := html.NewTokenizer(strings.NewReader(htmlText))
	inScript := false
	for {
		switch z.Next() {
		case html.ErrorToken:
			return nil, "", false
		case html.StartTagToken:
			name, _ := z.TagName()
			inScript = string(name) == "script"
		case html.EndTagToken:
			inScript = false
		case html.TextToken:
			if !inScript {
				continue
			}
			script := z.Text()
			if !bytes.Contains(script, []byte("vegaEmbed(")) {
				continue
			}
			i := bytes.LastIndex(script, []byte("})("))
			if i < 0 {
				continue
			}
			dec := json.NewDecoder(bytes.NewReader(script[i+3:]))
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				continue
			}
			var head struct {
				Schema string `json:"$schema"`
			}
			if json.Unmarshal(raw, &head) != nil {
				continue
			}
			if m := vegaLiteSchemaRE.FindStringSubmatch(head.Schema); m != nil {
				return raw, "application/vnd.vegalite.v" + m[1] + "+json", true
			}
		}
	}
}
