package mcpserver

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/kernel-mcp/kernel-mcp/engine"
	"github.com/kernel-mcp/kernel-mcp/kernel"
	"github.com/kernel-mcp/kernel-mcp/outputtext"
	"github.com/kernel-mcp/kernel-mcp/toolresult"
)

// BenchmarkRenderNonChart renders a result that holds no chart (a print
// and a DataFrame's text/plain and text/html) with the policy
// toolresult.Renderer.Block makes, its modelImage set (engine.Session.ModelImage, of a real session)
// and nil: what chart images add to the outputs that are not charts.
func BenchmarkRenderNonChart(b *testing.B) {
	if err := exec.Command("python3", "-c", "import ipykernel").Run(); err != nil {
		b.Skip("python3 with ipykernel is needed")
	}
	srv, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	ss, err := srv.eng.Create(context.Background(), "bench", engine.Choice{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	res := &kernel.ExecuteResult{ExecutionCount: 3, Outputs: []kernel.Output{
		{Type: kernel.OutputStream, Name: "stdout", Text: "loaded 300 rows\n"},
		{Type: kernel.OutputExecuteResult, Data: map[string]json.RawMessage{
			"text/plain": jsonString(dataFramePlain),
			"text/html":  jsonString(dataFrameHTML),
		}},
	}}
	pol := func(withImages bool) *toolresult.ImagePolicy {
		p := &toolresult.ImagePolicy{
			MaxInline:  srv.cfg.MaxInlineImage,
			Session:    ss.ID(),
			Store:      func() *engine.ImageStore { return ss.Images(true) },
			WidgetText: ss.WidgetText,
		}
		if withImages {
			p.ModelImage = func(o kernel.Output, d outputtext.Description) ([]byte, bool, error) {
				return ss.ModelImage(context.Background(), o, d)
			}
		}
		return p
	}
	for _, c := range []struct {
		name string
		pol  *toolresult.ImagePolicy
	}{{"modelImage", pol(true)}, {"nil", pol(false)}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				var out RunOutput
				toolresult.Render(res, &out, srv.cfg.OutputLimit, c.pol, engine.StreamShown{})
			}
		})
	}
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

const dataFramePlain = `   region  units  price
0   North     12   3.50
1   South     40  12.25
2    East      7   8.10
3    West     33  19.99
4   North     21   4.75`

const dataFrameHTML = `<div>
<style scoped>
    .dataframe tbody tr th:only-of-type { vertical-align: middle; }
    .dataframe tbody tr th { vertical-align: top; }
    .dataframe thead th { text-align: right; }
</style>
<table border="1" class="dataframe">
  <thead>
    <tr style="text-align: right;"><th></th><th>region</th><th>units</th><th>price</th></tr>
  </thead>
  <tbody>
    <tr><th>0</th><td>North</td><td>12</td><td>3.50</td></tr>
    <tr><th>1</th><td>South</td><td>40</td><td>12.25</td></tr>
    <tr><th>2</th><td>East</td><td>7</td><td>8.10</td></tr>
    <tr><th>3</th><td>West</td><td>33</td><td>19.99</td></tr>
    <tr><th>4</th><td>North</td><td>21</td><td>4.75</td></tr>
  </tbody>
</table>
<p>5 rows × 3 columns</p>
</div>`
