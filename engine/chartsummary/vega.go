package chartsummary

func summarizeVega(s *Summary, spec obj) {}
