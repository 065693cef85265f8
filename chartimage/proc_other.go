//go:build !linux

package chartimage

import "os/exec"

// prepareCmd: only Linux can tie the browser's life to the server's; on
// other systems the renderer's Close stops it.
func prepareCmd(*exec.Cmd) {}
