package knowledge

import (
	"math"
	"sort"
)

// Stats is the calibration of an employee's beliefs.
type Stats struct {
	NSubmitted  int          `json:"n_submitted"`
	NSettledAll int          `json:"n_settled_all"`
	Status      string       `json:"calibration_status"`
	Verified    Verified     `json:"verified"`
	SelfReport  SelfReported `json:"self_reported"`
	PerSubject  []SubjectRow `json:"per_subject"`
	Note        string       `json:"note"`
}

// Calibration statuses.
const (
	NoVerified   = "no_verified_settlements"
	Insufficient = "insufficient_samples"
	Calibrated   = "calibrated"
)

// Verified summarises the verified settlements. The rates and scores are
// nil unless the status is calibrated.
type Verified struct {
	N              int      `json:"n"`
	Hits           int      `json:"hits"`
	HitRate        *float64 `json:"hit_rate"`
	WilsonLow      *float64 `json:"hit_rate_wilson_low"`
	MeanBrier      *float64 `json:"mean_brier"`
	Overconfidence *float64 `json:"overconfidence"`
}

// SelfReported summarises the employee's own settlements: descriptive,
// never calibration.
type SelfReported struct {
	N       int      `json:"n"`
	HitRate *float64 `json:"hit_rate"`
}

// SubjectRow is one subject's share.
type SubjectRow struct {
	Subject  string `json:"subject"`
	Verified struct {
		N         int      `json:"n"`
		Hits      int      `json:"hits"`
		MeanBrier *float64 `json:"mean_brier"`
	} `json:"verified"`
	SelfReported struct {
		N int `json:"n"`
	} `json:"self_reported"`
}

// wilsonZ is the normal quantile of a two-sided 95% interval.
const wilsonZ = 1.959963984540054

// hit reports whether a settled belief called it: probability at least
// one half on a claim that held, or below one half on one that did not.
func hit(b Belief) bool { return (b.Probability >= 0.5) == *b.Outcome }

// Calibrate computes the stats of bs. A belief's hit is whether the side
// it leaned to happened; its Brier score is (probability - outcome)²;
// overconfidence is the mean confidence (the probability of the side it
// leaned to) minus the hit rate, so positive means too sure.
func Calibrate(bs []Belief) Stats {
	st := Stats{NSubmitted: len(bs), Status: NoVerified, PerSubject: []SubjectRow{}}
	subjects := map[string]*SubjectRow{}
	briers := map[string]float64{}
	var brier, conf float64
	selfHits := 0
	for _, b := range bs {
		if b.Outcome == nil || b.SettleSource == "" {
			continue
		}
		row := subjects[b.Subject]
		if row == nil {
			row = &SubjectRow{Subject: b.Subject}
			subjects[b.Subject] = row
		}
		o := 0.0
		if *b.Outcome {
			o = 1
		}
		switch b.SettleSource {
		case PlatformVerified:
			st.Verified.N++
			row.Verified.N++
			d := (b.Probability - o) * (b.Probability - o)
			brier += d
			briers[b.Subject] += d
			conf += math.Max(b.Probability, 1-b.Probability)
			if hit(b) {
				st.Verified.Hits++
				row.Verified.Hits++
			}
		default:
			st.SelfReport.N++
			row.SelfReported.N++
			if hit(b) {
				selfHits++
			}
		}
	}
	st.NSettledAll = st.Verified.N + st.SelfReport.N
	if st.SelfReport.N > 0 {
		st.SelfReport.HitRate = ptr(float64(selfHits) / float64(st.SelfReport.N))
	}
	if n := st.Verified.N; n >= CalibratedAt {
		st.Status = Calibrated
		p := float64(st.Verified.Hits) / float64(n)
		st.Verified.HitRate = ptr(p)
		st.Verified.WilsonLow = ptr(wilsonLow(st.Verified.Hits, n))
		st.Verified.MeanBrier = ptr(brier / float64(n))
		st.Verified.Overconfidence = ptr(conf/float64(n) - p)
	} else if n > 0 {
		st.Status = Insufficient
	}
	for _, row := range subjects {
		if row.Verified.N > 0 {
			row.Verified.MeanBrier = ptr(briers[row.Subject] / float64(row.Verified.N))
		}
		st.PerSubject = append(st.PerSubject, *row)
	}
	sort.Slice(st.PerSubject, func(i, j int) bool { return st.PerSubject[i].Subject < st.PerSubject[j].Subject })
	st.Note = note(st)
	return st
}

func note(st Stats) string {
	switch st.Status {
	case NoVerified:
		return "No verified settlements: settlements an AI employee reports itself are recorded but never count toward calibration; only an operator's verified settlement does."
	case Insufficient:
		return "Fewer than 30 verified settlements: hit rates and scores are withheld until there are enough."
	}
	return "Calibration counts verified settlements only; self_reported is descriptive."
}

// wilsonLow is the lower bound of the Wilson score interval of hits/n.
func wilsonLow(hits, n int) float64 {
	p, nf, z2 := float64(hits)/float64(n), float64(n), wilsonZ*wilsonZ
	return (p + z2/(2*nf) - wilsonZ*math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))) / (1 + z2/nf)
}

func ptr(f float64) *float64 { return &f }
