package outputtext

import (
	"bytes"
	"encoding/json"
	"strings"
)

// BokehExec is the MIME type of the display Bokeh's show() sends in a
// notebook (after output_notebook()): next to it, application/javascript
// embeds the plot's document, and a separate text/html display holds only
// the empty <div> BokehJS draws into.
const BokehExec = "application/vnd.bokehjs_exec.v0+json"

// bokehDocs returns the document JSON that a Bokeh show() display embeds
// in its JavaScript ("const docs_json = {...};"), or false.
func bokehDocs(data map[string]json.RawMessage) (json.RawMessage, bool) {
	if _, ok := data[BokehExec]; !ok {
		return nil, false
	}
	js, ok := bundleString(data, "application/javascript")
	if !ok || len(js) > maxEmbeddedHTML {
		return nil, false
	}
	_, rest, ok := strings.Cut(js, "docs_json = ")
	if !ok || !strings.HasPrefix(rest, "{") {
		return nil, false
	}
	var raw json.RawMessage
	if err := json.NewDecoder(bytes.NewReader([]byte(rest))).Decode(&raw); err != nil {
		return nil, false
	}
	return raw, true
}
