package mcpb

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"github.com/kernel-mcp/kernel-mcp/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// manifestVersion is the MCPB manifest spec the bundle follows: 0.3, the
// current one in MANIFEST.md and mcpb's "latest" schema (0.4 only adds the
// experimental "uv" server type).
const manifestVersion = "0.3"

// iconPath is the icon's place in the bundle.
const iconPath = "icon.png"

// repoURL is the project's home, given as repository and homepage.
const repoURL = "https://github.com/kernel-mcp/kernel-mcp"

// manifest is manifest.json, its fields in the order MANIFEST.md lists
// them.
type manifest struct {
	ManifestVersion string        `json:"manifest_version"`
	Name            string        `json:"name"`
	DisplayName     string        `json:"display_name"`
	Version         string        `json:"version"`
	Description     string        `json:"description"`
	LongDescription string        `json:"long_description"`
	Author          author        `json:"author"`
	Repository      repository    `json:"repository"`
	Homepage        string        `json:"homepage"`
	Documentation   string        `json:"documentation"`
	Support         string        `json:"support"`
	Icon            string        `json:"icon"`
	Server          server        `json:"server"`
	Tools           []tool        `json:"tools"`
	ToolsGenerated  bool          `json:"tools_generated"`
	Keywords        []string      `json:"keywords"`
	Compatibility   compatibility `json:"compatibility"`
	UserConfig      userConfigs   `json:"user_config"`
}

type author struct {
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
}

type repository struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

type server struct {
	Type       string    `json:"type"`
	EntryPoint string    `json:"entry_point"`
	MCPConfig  mcpConfig `json:"mcp_config"`
}

type mcpConfig struct {
	Command           string                      `json:"command"`
	Args              []string                    `json:"args"`
	Env               map[string]string           `json:"env,omitempty"`
	PlatformOverrides map[string]platformOverride `json:"platform_overrides,omitempty"`
}

// platformOverride replaces the command only. A host replaces args and env
// wholesale when an override names them (mcpb's getMcpConfigForManifest:
// platformConfig.env || result.env), so leaving them out keeps the
// user_config variables for every platform.
type platformOverride struct {
	Command string `json:"command"`
}

type tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

type compatibility struct {
	Platforms []string `json:"platforms"`
}

// userConfigs is the user_config object, its keys in the order given:
// Claude Desktop shows the settings in the object's order.
type userConfigs []userConfig

func (u userConfigs) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, c := range u {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(c.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// userConfig is one setting Claude Desktop shows for the extension.
type userConfig struct {
	key         string
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
	// Default is always set: a host substitutes ${user_config.KEY} only for
	// keys that have a value (the user's or the default). With neither it
	// leaves the literal "${user_config.KEY}" in the env, which the server
	// would take for an interpreter path. An empty string default becomes
	// an empty variable, which the server treats as unset.
	Default any      `json:"default"`
	Min     *float64 `json:"min,omitempty"`
}

// The user_config keys and the environment variables they become.
const (
	configPython  = "python"
	configWorkdir = "workdir"
	configTimeout = "timeout"
)

// newManifest is the bundle's manifest for a version and the server's tools.
func newManifest(version string, tools []tool) manifest {
	zero := 0.0
	command := func(platform string) string { return "${__dirname}/" + serverPaths[platform] }
	overrides := map[string]platformOverride{}
	for _, p := range platforms {
		overrides[p] = platformOverride{Command: command(p)}
	}
	return manifest{
		ManifestVersion: manifestVersion,
		Name:            "kernel-mcp",
		DisplayName:     "kernel-mcp: Jupyter kernels",
		Version:         version,
		Description:     "Persistent Jupyter kernel sessions: run Python, keep variables, see plots and tables, save notebooks.",
		LongDescription: "kernel-mcp gives the assistant real Jupyter kernels (ipykernel by default). " +
			"Each session keeps its variables between calls; results carry text, tables and images; " +
			"the history exports as a script or a notebook. The code runs on this computer, with the " +
			"Python interpreter you choose, which needs ipykernel (`python -m pip install ipykernel`).",
		Author:        author{Name: "kernel-mcp contributors", URL: repoURL},
		Repository:    repository{Type: "git", URL: repoURL},
		Homepage:      repoURL,
		Documentation: repoURL + "/blob/main/docs/bundle.md",
		Support:       repoURL + "/issues",
		Icon:          iconPath,
		Server: server{
			Type:       "binary",
			EntryPoint: serverPaths["darwin"],
			MCPConfig: mcpConfig{
				Command: command("darwin"),
				Args:    []string{},
				Env: map[string]string{
					"PYTHON_MCP_INTERPRETER": "${user_config." + configPython + "}",
					"KERNEL_MCP_WORKDIR":     "${user_config." + configWorkdir + "}",
					"KERNEL_MCP_TIMEOUT":     "${user_config." + configTimeout + "}",
				},
				PlatformOverrides: overrides,
			},
		},
		Tools:          tools,
		ToolsGenerated: false,
		Keywords:       []string{"jupyter", "ipykernel", "python", "notebook", "kernel", "data science", "repl"},
		Compatibility:  compatibility{Platforms: platforms},
		UserConfig: userConfigs{
			{
				key:   configPython,
				Type:  "file",
				Title: "Python interpreter",
				Description: "The python executable whose ipykernel runs the code, e.g. a virtual environment's bin/python " +
					"(Windows: Scripts\\python.exe). It needs ipykernel. Empty: kernel-mcp looks for one itself (the python3 kernelspec, " +
					"then python3 on the PATH Claude Desktop passes on), which is often not the Python you work with.",
				Default: "",
			},
			{
				key:         configWorkdir,
				Type:        "directory",
				Title:       "Working folder",
				Description: "The folder the kernels start in, where relative paths in your code point. Empty: the server's default.",
				Default:     "",
			},
			{
				key:         configTimeout,
				Type:        "number",
				Title:       "Timeout (seconds)",
				Description: "The longest one execution may run before it is interrupted; 0 means no limit.",
				Default:     0,
				Min:         &zero,
			},
		},
	}
}

// json is the manifest as written to manifest.json: indented, with a final
// newline. encoding/json sorts map keys, so the bytes depend only on the
// content.
func (m manifest) json() ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// serverTools lists the tools the kernel-mcp command offers by default
// (--tools all), asking a server built in process through an in-memory
// MCP client, as Claude Desktop's client would see them: a client that does
// not declare the MCP Apps extension, so app-only tools are not listed.
func serverTools(ctx context.Context) ([]tool, error) {
	srv, err := mcpserver.New(mcpserver.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcpb-manifest", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	var tools []tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		tools = append(tools, tool{Name: t.Name, Description: t.Description})
	}
	if len(tools) == 0 {
		return nil, fmt.Errorf("the server lists no tools")
	}
	return tools, nil
}
