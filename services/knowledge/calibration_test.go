package knowledge_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/knowledge"
)

func settled(subject string, p float64, outcome bool, how knowledge.SettleSource) knowledge.Belief {
	return knowledge.Belief{Subject: subject, Probability: p, Outcome: &outcome, SettleSource: how}
}

func TestCalibrationStatuses(t *testing.T) {
	var bs []knowledge.Belief
	bs = append(bs, knowledge.Belief{Subject: "fx", Probability: 0.7}) // submitted, unsettled
	for range 40 {
		bs = append(bs, settled("fx", 0.9, true, knowledge.AgentUnverified))
	}
	st := knowledge.Calibrate(bs)
	require.Equal(t, knowledge.NoVerified, st.Status, "self-reported settlements never count")
	require.Equal(t, 41, st.NSubmitted)
	require.Equal(t, 40, st.NSettledAll)
	require.Equal(t, 40, st.SelfReport.N)
	require.InDelta(t, 1.0, *st.SelfReport.HitRate, 1e-9)
	require.Zero(t, st.Verified.N)
	require.Nil(t, st.Verified.HitRate)

	for range 29 {
		bs = append(bs, settled("fx", 0.8, true, knowledge.PlatformVerified))
	}
	st = knowledge.Calibrate(bs)
	require.Equal(t, knowledge.Insufficient, st.Status, "1-29 verified")
	require.Equal(t, 29, st.Verified.N)
	require.Nil(t, st.Verified.HitRate, "scores are null unless calibrated")
	require.Nil(t, st.Verified.WilsonLow)
	require.Nil(t, st.Verified.MeanBrier)
	require.Nil(t, st.Verified.Overconfidence)

	bs = append(bs, settled("rates", 0.8, false, knowledge.PlatformVerified))
	st = knowledge.Calibrate(bs)
	require.Equal(t, knowledge.Calibrated, st.Status, "30 verified")
	require.Equal(t, 30, st.Verified.N)
	require.Equal(t, 29, st.Verified.Hits)
	require.Equal(t, 70, st.NSettledAll)
	p := 29.0 / 30
	require.InDelta(t, p, *st.Verified.HitRate, 1e-12)
	// Wilson lower bound of 29/30 at 95%, computed independently.
	z := 1.959963984540054
	n := 30.0
	want := (p + z*z/(2*n) - z*math.Sqrt(p*(1-p)/n+z*z/(4*n*n))) / (1 + z*z/n)
	require.InDelta(t, want, *st.Verified.WilsonLow, 1e-12)
	require.InDelta(t, 0.8333, *st.Verified.WilsonLow, 1e-4)
	// Brier: 29 × 0.04 + 1 × 0.64 over 30.
	require.InDelta(t, (29*0.04+0.64)/30, *st.Verified.MeanBrier, 1e-12)
	// Confidence 0.8 every time minus hit rate.
	require.InDelta(t, 0.8-p, *st.Verified.Overconfidence, 1e-12)

	require.Len(t, st.PerSubject, 2)
	require.Equal(t, "fx", st.PerSubject[0].Subject)
	require.Equal(t, 29, st.PerSubject[0].Verified.N)
	require.Equal(t, 40, st.PerSubject[0].SelfReported.N)
	require.Equal(t, "rates", st.PerSubject[1].Subject)
	require.Equal(t, 0, st.PerSubject[1].Verified.Hits)
	require.InDelta(t, 0.64, *st.PerSubject[1].Verified.MeanBrier, 1e-12)
}

func TestCalibrationHitIsTheSideLeanedTo(t *testing.T) {
	var bs []knowledge.Belief
	for range 30 {
		bs = append(bs, settled("s", 0.2, false, knowledge.PlatformVerified)) // leaned "no", and no: a hit
	}
	st := knowledge.Calibrate(bs)
	require.Equal(t, 30, st.Verified.Hits)
	require.InDelta(t, -0.2, *st.Verified.Overconfidence, 1e-12, "80% sure and always right: underconfident")
	require.InDelta(t, 0.04, *st.Verified.MeanBrier, 1e-12)
}

func TestSettledResultSaysWhetherItCounts(t *testing.T) {
	r := knowledge.SettledResult(settled("s", 0.6, true, knowledge.AgentUnverified))
	m := r.Structured.(map[string]any)
	require.Equal(t, false, m["counts_toward_calibration"])
	require.Equal(t, knowledge.SettleNote, m["note"])
	r = knowledge.SettledResult(settled("s", 0.6, true, knowledge.PlatformVerified))
	m = r.Structured.(map[string]any)
	require.Equal(t, true, m["counts_toward_calibration"])
	require.NotContains(t, m, "note")
}
