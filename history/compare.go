package history

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// Normalisation rules for comparing two runs of the same code: only what
// differs between two runs by nature.
var (
	// Object addresses in default reprs ("<Foo at 0x7f3a...>").
	addressRE = regexp.MustCompile(`0x[0-9a-f]{6,16}`)
	// ipykernel names the files of cells after its process id
	// ("/tmp/ipykernel_12345/2135332717.py"); the hash after it is the
	// code's, so it stays.
	ipykernelDirRE = regexp.MustCompile(`ipykernel_\d+`)
	// Timing magics report measured times: %time's "CPU times: user 30 µs"
	// and "Wall time: 39.6 µs", %timeit's "2.47 µs ± 207 ns per loop". The
	// unit goes too: the same run can be 999 ns or 1.01 µs. IPython
	// writes three significant digits with %g, so 1000 µs is "1e+03 µs".
	timingRE   = regexp.MustCompile(`(?m)^(CPU times|Wall time|.* per loop).*$`)
	timeUnitRE = regexp.MustCompile(`[0-9.]+(e[+-]?[0-9]+)? ?(ns|µs|us|ms|s)\b`)
	// %timeit warns when its slowest run took over 4 times its fastest,
	// which depends on the machine's load at that moment.
	slowestRunRE = regexp.MustCompile(`(?m)^The slowest run took [0-9.]+ times longer than the fastest\..*\n?`)
	// Matplotlib says this once per machine, on the first import after
	// installation: in whichever of the two runs gets there first.
	fontCacheRE = regexp.MustCompile(`(?m)^Matplotlib is building the font cache; this may take a moment\.\n?`)
)

// Normalise rewrites what differs between two runs of the same code by
// nature: object addresses, ipykernel's per-process cell file names,
// measured times of the timing magics, and one-off warnings. cwd, when not
// empty, becomes "<cwd>" (two runs in different folders).
func Normalise(s, cwd string) string {
	if cwd != "" {
		s = strings.ReplaceAll(s, cwd, "<cwd>")
	}
	s = addressRE.ReplaceAllString(s, "0x<address>")
	s = ipykernelDirRE.ReplaceAllString(s, "ipykernel_<pid>")
	s = slowestRunRE.ReplaceAllString(s, "")
	s = fontCacheRE.ReplaceAllString(s, "")
	return timingRE.ReplaceAllStringFunc(s, func(line string) string {
		return timeUnitRE.ReplaceAllString(line, "<time>")
	})
}

// SameOutputs reports whether two runs of a block gave the same outputs:
// stdout and stderr each as a whole (how a stream is cut into chunks is
// timing), then the other outputs in order, text after PlainText and
// Normalise, images by the hash of their decoded bytes, and errors by name
// and value. Execution counts, metadata and tracebacks' frames are left
// out; they differ between any two runs.
func SameOutputs(a, b []Output) bool {
	return slices.Equal(outputKey(a), outputKey(b))
}

// DiffOutputs names what differs between two runs' outputs as SameOutputs
// compares them: "stdout", "stderr", "error", a MIME type, or "the number
// of outputs"; "" when they are the same.
func DiffOutputs(a, b []Output) string {
	ka, kb := outputKey(a), outputKey(b)
	for i := 0; i < min(len(ka), len(kb)); i++ {
		if ka[i] != kb[i] {
			what, _, _ := strings.Cut(ka[i], ":")
			if other, _, _ := strings.Cut(kb[i], ":"); other != what {
				return "the kinds of outputs"
			}
			return what
		}
	}
	if len(ka) != len(kb) {
		return "the number of outputs"
	}
	return ""
}

// outputKey is what SameOutputs compares.
func outputKey(outs []Output) []string {
	var stdout, stderr strings.Builder
	var key []string
	for _, o := range outs {
		switch o.OutputType {
		case "stream":
			if o.Name == "stderr" {
				stderr.WriteString(o.Text)
			} else {
				stdout.WriteString(o.Text)
			}
		case "error":
			key = append(key, "error:"+Normalise(PlainText(o.EName+": "+o.EValue), ""))
		default:
			for _, mime := range sortedKeys(o.Data) {
				key = append(key, mime+":"+mimeKey(mime, o.Data[mime]))
			}
		}
	}
	return append([]string{"stdout:" + Normalise(PlainText(stdout.String()), ""), "stderr:" + Normalise(PlainText(stderr.String()), "")}, key...)
}

// mimeKey is one MIME value as SameOutputs compares it.
func mimeKey(mime string, v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) != nil {
		var lines []string // nbformat's list of lines
		if json.Unmarshal(v, &lines) != nil {
			return string(v) // JSON data (application/json, vega...)
		}
		s = strings.Join(lines, "")
	}
	if strings.HasPrefix(mime, "image/") && mime != "image/svg+xml" {
		b, err := base64.StdEncoding.DecodeString(strings.Map(dropSpace, s))
		if err == nil {
			sum := sha256.Sum256(b)
			return base64.StdEncoding.EncodeToString(sum[:])
		}
	}
	return Normalise(PlainText(s), "")
}

func dropSpace(r rune) rune {
	if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
		return -1
	}
	return r
}
