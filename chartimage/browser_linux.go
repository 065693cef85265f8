package chartimage

func browserLocations() []string {
	return []string{
		"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome",
		"microsoft-edge", "microsoft-edge-stable",
		"/usr/bin/chromium", "/usr/bin/chromium-browser", "/snap/bin/chromium",
		"/opt/google/chrome/chrome", "/opt/microsoft/msedge/msedge",
	}
}
