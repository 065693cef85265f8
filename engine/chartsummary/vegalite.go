package chartsummary

func summarizeVegaLite(s *Summary, spec obj) {}
