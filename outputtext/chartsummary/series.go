package chartsummary

// seriesAcc counts points per legend entry in order of first appearance.
type seriesAcc struct {
	names  []string
	points map[string]int
	more   bool // distinct names beyond maxDistinct were dropped
}

func (s *seriesAcc) add(name string, points int) {
	if s.points == nil {
		s.points = map[string]int{}
	}
	if _, ok := s.points[name]; !ok {
		if len(s.names) >= maxDistinct {
			s.more = true
			return
		}
		s.names = append(s.names, name)
	}
	s.points[name] += points
}

// fill lists the series in the summary, at most MaxSeries of them.
func (s *seriesAcc) fill(sum *Summary) {
	for i, n := range s.names {
		if i == MaxSeries {
			sum.MoreSeries = len(s.names) - MaxSeries
			break
		}
		sum.Series = append(sum.Series, Series{Name: label(n), Points: s.points[n]})
	}
}

// kindSet collects kinds in order of first use.
type kindSet []string

func (k *kindSet) add(kind string) {
	kind = label(kind)
	if kind == "" {
		return
	}
	for _, have := range *k {
		if have == kind {
			return
		}
	}
	if len(*k) < 16 {
		*k = append(*k, kind)
	}
}
