package read

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// This file reads the exports that EKS users actually have: CloudWatch Logs' filter-log-events
// output, Logs Insights results (API JSON, console JSON and CSV), and subscription payloads.
// Each yields "messages", one audit event per message, which go through the same line parser
// as kube-apiserver's own log file.

// message is one audit event taken out of an export.
type message struct {
	data       []byte
	exportTime int64  // the log pipeline's timestamp, Unix ns (0 if none)
	eventID    string // CloudWatch eventId / @ptr: orders same-millisecond events
	loc        int64  // 1-based record number in the input
	tooLong    bool   // the record was over its limit; data is nil
}

// sortBatch is how many messages are put in (timestamp, eventId) order at a time: exports are
// sorted by time already, or (Logs Insights, "sort @timestamp desc") hold at most 10,000 rows.
const sortBatch = 20000

// messageSink receives messages in input order, batched; it may keep the slice.
type messageSink func([]message) error

// messageReaders reads each non-line format into a batcher.
var messageReaders = map[format]func(io.Reader, *batcher) error{
	formatFilterEvents: readFilterEvents,
	formatInsightsJSON: readInsightsJSON,
	formatInsightsCSV:  readInsightsCSV,
	formatSubscription: readSubscription,
	formatJSONArray:    readJSONArray,
	formatJSONStream:   readJSONStream,
}

// readMessages streams the messages of a non-line input to sink. No record is held whole
// beyond limit bytes (twice that for a record that quotes its event as a JSON string, whose
// escapes take room): a longer one is skimmed to its end and passed on as tooLong.
func readMessages(d *decodedInput, limit int, sink messageSink) error {
	read, ok := messageReaders[d.format]
	if !ok {
		return fmt.Errorf("format %v has no message reader", d.format)
	}
	b := &batcher{sink: sink, limit: limit}
	err := read(d.r, b)
	if ferr := b.flush(); err == nil {
		err = ferr
	}
	return err
}

// maxBatchBytes bounds the message bytes a batch holds before it is sorted and handed on.
const maxBatchBytes = 64 << 20

type batcher struct {
	sink  messageSink
	buf   []message
	bytes int
	n     int64
	limit int // bytes of an audit event (--max-line-size)
}

// quotedLimit is the bound on a record that carries the event as a JSON string.
func (b *batcher) quotedLimit() int { return 2*b.limit + 64<<10 }

func (b *batcher) add(m message) error {
	b.n++
	m.loc = b.n
	if len(m.data) > b.limit {
		m.data, m.tooLong = nil, true
	}
	b.buf = append(b.buf, m)
	b.bytes += len(m.data)
	if len(b.buf) >= sortBatch || b.bytes >= maxBatchBytes {
		return b.flush()
	}
	return nil
}

// addTooLong counts a record that was over its limit.
func (b *batcher) addTooLong() error { return b.add(message{tooLong: true}) }

func (b *batcher) flush() error {
	if len(b.buf) == 0 {
		return nil
	}
	// Order by (timestamp, eventId), never by timestamp alone: CloudWatch holds many events of
	// the same millisecond, and an export sorted newest-first must come out oldest-first.
	sort.SliceStable(b.buf, func(i, j int) bool {
		if b.buf[i].exportTime != b.buf[j].exportTime {
			return b.buf[i].exportTime < b.buf[j].exportTime
		}
		return b.buf[i].eventID < b.buf[j].eventID
	})
	out := b.buf
	b.buf, b.bytes = nil, 0
	return b.sink(out)
}

type cwEvent struct {
	LogStreamName string `json:"logStreamName"`
	Timestamp     int64  `json:"timestamp"`
	Message       string `json:"message"`
	EventID       string `json:"eventId"`
	ID            string `json:"id"` // subscription payloads call it id
}

// eachDocument calls fn for every top-level value of a stream of concatenated documents.
func eachDocument(v *valueReader, fn func() error) error {
	for {
		if _, err := v.peek(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if err := fn(); err != nil {
			return err
		}
	}
}

// nextValue reads the next record of a document, quoting the event as a JSON string. It returns
// nil when there is nothing to decode: a record over the limit (counted as too long, and
// skimmed) or an error.
func (b *batcher) nextValue(v *valueReader) ([]byte, error) {
	raw, tooLong, err := v.value(b.quotedLimit())
	if err != nil {
		return nil, err
	}
	if tooLong {
		return nil, b.addTooLong()
	}
	return raw, nil
}

// nextCWEvent decodes one element of an events array. It returns nil when there is nothing to
// add: an element over the limit (counted as too long) or an error.
func nextCWEvent(v *valueReader, b *batcher, what string) (*cwEvent, error) {
	raw, err := b.nextValue(v)
	if raw == nil {
		return nil, err
	}
	var ev cwEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, fmt.Errorf("%s event %d: %w", what, b.n+1, err)
	}
	return &ev, nil
}

// addCWEvent adds an event's message, identified by id (eventId or id, whichever the layout
// names first).
func (b *batcher) addCWEvent(ev *cwEvent, id string) error {
	return b.add(message{data: []byte(ev.Message), exportTime: ev.Timestamp * 1e6, eventID: id})
}

// readCWEvent reads one element of an events array into a message.
func readCWEvent(v *valueReader, b *batcher, what string) error {
	ev, err := nextCWEvent(v, b, what)
	if ev == nil {
		return err
	}
	return b.addCWEvent(ev, cmp.Or(ev.EventID, ev.ID))
}

// readFilterEvents reads one or more concatenated `aws logs filter-log-events` documents.
func readFilterEvents(r io.Reader, b *batcher) error {
	v := newValueReader(r)
	err := eachDocument(v, func() error {
		return v.object(func(key string) error {
			if key != "events" {
				return v.skip()
			}
			return v.array(func() error { return readCWEvent(v, b, "filter-log-events") })
		})
	})
	if err != nil {
		return fmt.Errorf("filter-log-events document: %w", err)
	}
	return nil
}

// readInsightsJSON reads `aws logs get-query-results` output ({"results":[[{field,value}]]})
// or the console's JSON export (an array of objects keyed by field name).
func readInsightsJSON(r io.Reader, b *batcher) error {
	v := newValueReader(r)
	row := func(fields map[string]string) error {
		msg, ok := fields["@message"]
		if !ok {
			return errors.New("logs insights row without an @message field")
		}
		ts, _ := parseInsightsTime(fields["@timestamp"])
		return b.add(message{data: []byte(msg), exportTime: ts, eventID: fields["@ptr"]})
	}
	first, err := v.peek()
	if err != nil {
		return fmt.Errorf("logs insights results: %w", v.unexpected(err))
	}
	switch first {
	case '[':
		err := eachDocument(v, func() error {
			return v.array(func() error {
				raw, err := b.nextValue(v)
				if raw == nil {
					return err
				}
				var fields map[string]any
				if err := json.Unmarshal(raw, &fields); err != nil {
					return err
				}
				str := map[string]string{}
				for k, v := range fields {
					if s, ok := v.(string); ok {
						str[k] = s
					}
				}
				return row(str)
			})
		})
		if err != nil {
			return fmt.Errorf("logs insights export: %w", err)
		}
		return nil
	case '{':
		// One document, or several concatenated (one per page of get-query-results).
		err := eachDocument(v, func() error {
			return v.object(func(key string) error {
				if key != "results" {
					return v.skip()
				}
				return v.array(func() error {
					raw, err := b.nextValue(v)
					if raw == nil {
						return err
					}
					var cells []struct{ Field, Value string }
					if err := json.Unmarshal(raw, &cells); err != nil {
						return err
					}
					fields := make(map[string]string, len(cells))
					for _, c := range cells {
						fields[c.Field] = c.Value
					}
					return row(fields)
				})
			})
		})
		if err != nil {
			return fmt.Errorf("logs insights results: %w", err)
		}
		return nil
	}
	return fmt.Errorf("logs insights results: unexpected %q", first)
}

// parseInsightsTime reads "2024-04-05 06:04:14.665" (UTC), the way Logs Insights prints
// @timestamp, or a number of epoch milliseconds.
func parseInsightsTime(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	for _, layout := range []string{"2006-01-02 15:04:05.000", "2006-01-02 15:04:05", time.RFC3339Nano} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UnixNano(), true
		}
	}
	var ms int64
	if _, err := fmt.Sscanf(s, "%d", &ms); err == nil {
		return ms * 1e6, true
	}
	return 0, false
}

// readInsightsCSV reads a Logs Insights CSV export: a header naming the fields
// (@logStream,@timestamp,@message), then one row per event with the JSON CSV-quoted. Each row
// is cut out (bounded) before the csv package reads it.
func readInsightsCSV(r io.Reader, b *batcher) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	hrec, tooLong, err := csvRecord(br, maxKey, buf)
	if err == nil && tooLong {
		err = errors.New("longer than 4 KiB")
	}
	if err != nil {
		return fmt.Errorf("logs insights CSV header: %w", err)
	}
	header, err := readCSVFields(hrec)
	if err != nil {
		return fmt.Errorf("logs insights CSV header: %w", err)
	}
	msgCol, tsCol, ptrCol := -1, -1, -1
	for i, h := range header {
		switch strings.TrimPrefix(strings.TrimSpace(h), "\ufeff") {
		case "@message":
			msgCol = i
		case "@timestamp":
			tsCol = i
		case "@ptr":
			ptrCol = i
		}
	}
	if msgCol < 0 {
		return errors.New("logs insights CSV: no @message column in the header")
	}
	for row := 2; ; row++ {
		raw, tooLong, err := csvRecord(br, b.quotedLimit(), buf)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("logs insights CSV: %w", err)
		}
		buf = raw[:0]
		if tooLong {
			if err := b.addTooLong(); err != nil {
				return err
			}
			continue
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		rec, err := readCSVFields(raw)
		if err != nil {
			return fmt.Errorf("logs insights CSV: row %d: %w", row, err)
		}
		m := message{}
		if msgCol < len(rec) {
			m.data = []byte(rec[msgCol])
		}
		if tsCol >= 0 && tsCol < len(rec) {
			m.exportTime, _ = parseInsightsTime(rec[tsCol])
		}
		if ptrCol >= 0 && ptrCol < len(rec) {
			m.eventID = rec[ptrCol]
		}
		if err := b.add(m); err != nil {
			return err
		}
	}
}

// readCSVFields reads the fields of one CSV record.
func readCSVFields(rec []byte) ([]string, error) {
	cr := csv.NewReader(bytes.NewReader(rec))
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = false
	return cr.Read()
}

// readSubscription reads CloudWatch Logs subscription payloads: a stream of JSON documents
// (what Firehose writes to S3 once gunzipped), or lines of base64 each holding one gzipped
// payload (what a Kinesis consumer or a Lambda test event shows). A base64 line is bounded
// by --max-line-size, its decompressed payload by maxPayloadFactor times that.
func readSubscription(r io.Reader, b *batcher) error {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(4)
	if string(head) != "H4sI" {
		return readSubscriptionJSON(br, b)
	}
	var line, raw []byte
	for n := 1; ; n++ {
		l, tooLong, err := readRecordLine(br, b.limit, line)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if tooLong {
			if err := b.addTooLong(); err != nil {
				return err
			}
			continue
		}
		line = l[:0]
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		raw = slicesGrow(raw[:0], base64.StdEncoding.DecodedLen(len(l)))
		k, derr := base64.StdEncoding.Decode(raw[:cap(raw)], l)
		if derr != nil {
			return fmt.Errorf("subscription payload %d: base64: %w", n, derr)
		}
		zr, zerr := gzip.NewReader(bytes.NewReader(raw[:k]))
		if zerr != nil {
			return fmt.Errorf("subscription payload %d: gzip: %w", n, zerr)
		}
		lp := &limitedPayload{r: zr, max: int64(maxPayloadFactor) * int64(b.limit)}
		if perr := readSubscriptionJSON(lp, b); perr != nil {
			if errors.Is(perr, errPayloadTooLarge) {
				if err := b.addTooLong(); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("subscription payload %d: %w", n, perr)
		}
	}
}

// maxPayloadFactor times --max-line-size bounds one decompressed base64 subscription payload.
const maxPayloadFactor = 4

func slicesGrow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, 0, n)
	}
	return b
}

// controlMessage is how CloudWatch Logs starts the text of a subscription's control message.
const controlMessage = "CWL CONTROL MESSAGE"

func readSubscriptionJSON(r io.Reader, b *batcher) error {
	v := newValueReader(r)
	err := eachDocument(v, func() error {
		control := false
		return v.object(func(key string) error {
			switch key {
			case "messageType":
				raw, _, err := v.value(maxKey)
				if err != nil {
					return err
				}
				var mt string
				_ = json.Unmarshal(raw, &mt)
				control = mt == "CONTROL_MESSAGE"
				return nil
			case "logEvents":
				return v.array(func() error {
					if control {
						return v.skip()
					}
					ev, err := nextCWEvent(v, b, "log")
					if ev == nil {
						return err
					}
					if strings.HasPrefix(ev.Message, controlMessage) {
						return nil // messageType came after logEvents
					}
					return b.addCWEvent(ev, cmp.Or(ev.ID, ev.EventID))
				})
			}
			return v.skip()
		})
	})
	if err != nil {
		return fmt.Errorf("subscription payload: %w", err)
	}
	return nil
}

// readJSONArray reads JSON arrays whose elements are audit events (as `jq -s` writes).
func readJSONArray(r io.Reader, b *batcher) error {
	v := newValueReader(r)
	return eachDocument(v, func() error {
		err := v.array(func() error {
			raw, tooLong, err := v.value(b.limit)
			if err != nil {
				return err
			}
			if tooLong {
				return b.addTooLong()
			}
			return b.add(message{data: append([]byte(nil), raw...)})
		})
		if err != nil {
			return fmt.Errorf("JSON array element %d: %w", b.n+1, err)
		}
		return nil
	})
}

// readJSONStream reads concatenated JSON values, however they are laid out.
func readJSONStream(r io.Reader, b *batcher) error {
	v := newValueReader(r)
	return eachDocument(v, func() error {
		raw, tooLong, err := v.value(b.limit)
		if err != nil {
			return fmt.Errorf("JSON object %d: %w", b.n+1, err)
		}
		if tooLong {
			return b.addTooLong()
		}
		return b.add(message{data: append([]byte(nil), raw...)})
	})
}
