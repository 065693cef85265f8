//go:build !kernelmcp_external_assets

package assets

import "testing"

// A build that embeds the files never looks for the directory.
func TestCheckEmbedded(t *testing.T) {
	t.Setenv(EnvVar, t.TempDir()+"/nowhere")
	if err := Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}
