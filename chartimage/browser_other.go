//go:build !linux && !darwin && !windows

package chartimage

func browserLocations() []string {
	return []string{"chromium", "chromium-browser", "google-chrome", "chrome"}
}
