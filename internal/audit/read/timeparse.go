package read

import "time"

// parseTime converts an RFC 3339 timestamp to Unix nanoseconds. The audit log's own layout
// ("2024-04-05T05:58:52.744075Z") takes a fast path without allocation; anything else goes
// through time.Parse so that the two always agree.
func parseTime(b []byte) (int64, bool) {
	if t, ok := parseTimeFast(b); ok {
		return t, true
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return 0, false
	}
	return t.UnixNano(), true
}

func digits2(b []byte, i int) (int, bool) {
	c0, c1 := b[i]-'0', b[i+1]-'0'
	if c0 > 9 || c1 > 9 {
		return 0, false
	}
	return int(c0)*10 + int(c1), true
}

// parseTimeFast handles YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z only.
func parseTimeFast(b []byte) (int64, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[len(b)-1] != 'Z' {
		return 0, false
	}
	y1, ok1 := digits2(b, 0)
	y2, ok2 := digits2(b, 2)
	mo, ok3 := digits2(b, 5)
	d, ok4 := digits2(b, 8)
	h, ok5 := digits2(b, 11)
	mi, ok6 := digits2(b, 14)
	s, ok7 := digits2(b, 17)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) {
		return 0, false
	}
	y := y1*100 + y2
	if mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || s > 59 {
		return 0, false
	}
	var ns int64
	rest := b[19 : len(b)-1]
	if len(rest) > 0 {
		if rest[0] != '.' || len(rest) < 2 || len(rest) > 10 {
			return 0, false
		}
		for _, c := range rest[1:] {
			if c < '0' || c > '9' {
				return 0, false
			}
			ns = ns*10 + int64(c-'0')
		}
		// One multiplication by a table entry, not a division per digit: this runs twice for
		// every event.
		ns *= fractionScale[len(rest)-1]
	}
	days := daysFromCivil(y, mo, d)
	return (days*86400+int64(h*3600+mi*60+s))*1e9 + ns, true
}

// fractionScale[n] turns n fraction digits into nanoseconds.
var fractionScale = [10]int64{1e9, 1e8, 1e7, 1e6, 1e5, 1e4, 1e3, 1e2, 1e1, 1}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is the proleptic Gregorian day count since 1970-01-01 (H. Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era*146097+doe) - 719468
}
