package analyze

// tseries is a time series of fixed bucket count: when events fall outside its span it doubles
// the bucket width and folds pairs of buckets, so its memory never depends on how long a period
// the log covers. Bucket edges are multiples of the width counted from the Unix epoch, so two
// series can always be brought to the same layout.
type tseries struct {
	width  int64 // ns
	origin int64 // start of b[0], a multiple of width
	b      []bucket
}

type bucket struct {
	Requests  int64
	Throttled int64
	APFWaitUS int64 // summed apf-queue-wait
	APFWaited int64 // requests that reported a queue wait
}

func (b *bucket) add(o bucket) {
	b.Requests += o.Requests
	b.Throttled += o.Throttled
	b.APFWaitUS += o.APFWaitUS
	b.APFWaited += o.APFWaited
}

const seriesMaxBuckets = 720

// widthLadder lists the bucket widths a series moves through; each divides the next, so
// folding is exact, and each is a width people read easily on a chart.
var widthLadder = []int64{1e9, 5e9, 10e9, 30e9, 60e9, 300e9, 600e9, 1800e9, 3600e9, 3 * 3600e9,
	6 * 3600e9, 12 * 3600e9, 24 * 3600e9, 7 * 24 * 3600e9, 28 * 24 * 3600e9, 364 * 24 * 3600e9}

// nextWidth returns the ladder width after w (or twice w past the end of the ladder).
func nextWidth(w int64) int64 {
	for _, x := range widthLadder {
		if x > w {
			return x
		}
	}
	return w * 2
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// at returns the bucket holding time t.
func (s *tseries) at(t int64) *bucket {
	if s.b == nil {
		s.width = widthLadder[0]
		s.origin = floorDiv(t, s.width) * s.width
		s.b = make([]bucket, 1, 64)
	}
	for {
		if t < s.origin {
			newOrigin := floorDiv(t, s.width) * s.width
			n := int((s.origin - newOrigin) / s.width)
			if len(s.b)+n > seriesMaxBuckets {
				s.double()
				continue
			}
			nb := make([]bucket, n+len(s.b), n+cap(s.b))
			copy(nb[n:], s.b)
			s.b, s.origin = nb, newOrigin
		}
		idx := (t - s.origin) / s.width
		if idx < int64(len(s.b)) {
			return &s.b[idx]
		}
		if idx < seriesMaxBuckets {
			for int64(len(s.b)) <= idx {
				s.b = append(s.b, bucket{})
			}
			return &s.b[idx]
		}
		s.double()
	}
}

func (s *tseries) double() {
	nw := nextWidth(s.width)
	no := floorDiv(s.origin, nw) * nw
	end := s.origin + int64(len(s.b))*s.width
	n := int(floorDiv(end-1-no, nw)) + 1
	nb := make([]bucket, n, max(n, 64))
	for i := range s.b {
		t := s.origin + int64(i)*s.width
		nb[(t-no)/nw].add(s.b[i])
	}
	s.width, s.origin, s.b = nw, no, nb
}

// rebucket returns the series' buckets laid out from origin in steps of width, over n
// buckets. width must be a multiple of s.width and origin a multiple of width.
func (s *tseries) rebucket(origin, width int64, n int) []bucket {
	out := make([]bucket, n)
	for i := range s.b {
		t := s.origin + int64(i)*s.width
		j := floorDiv(t-origin, width)
		if j >= 0 && j < int64(n) {
			out[j].add(s.b[i])
		}
	}
	return out
}

// latency histogram: bucket k counts durations in [2^(k-1), 2^k) microseconds.
const histBuckets = 34

type latHist [histBuckets]uint32

func (h *latHist) add(d int64) {
	us := d / 1000
	k := 0
	for us > 0 && k < histBuckets-1 {
		us >>= 1
		k++
	}
	h[k]++
}

// quantile returns the upper bound (ns) of the bucket holding quantile q.
func (h *latHist) quantile(q float64, total int64) int64 {
	if total == 0 {
		return 0
	}
	need := int64(q*float64(total) + 0.999999)
	var acc int64
	for k, c := range h {
		acc += int64(c)
		if acc >= need {
			return (int64(1) << k) * 1000
		}
	}
	return (int64(1) << (histBuckets - 1)) * 1000
}
