package mcpserver

// What the server's instructions tell the assistant about --sandbox
// (engine/confine.go has the rules themselves).

// sandboxInstructions tells the assistant, in the server's instructions,
// what the sandbox allows, so it does not spend calls finding out.
func sandboxInstructions(cfg Config) string {
	if cfg.Sandbox == nil {
		return ""
	}
	net := "Code has no network (install_package cannot work)"
	if cfg.Sandbox.Network {
		net = "Code has the network, but the interpreter is read-only"
	}
	return "\nThis server runs code in a sandbox: files can be written only in the session's working directory (the default one is shared by sessions without a cwd), " +
		"the home directory and /tmp are empty and private, only the system's folders (/usr, /etc) and the interpreter are there besides, read-only (a path elsewhere is missing unless the server allows it). " + net + ". Tools' paths must lie in the working directory."
}
