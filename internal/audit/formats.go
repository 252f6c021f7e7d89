package audit

import (
	"bufio"
	"bytes"
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
}

// sortBatch is how many messages are put in (timestamp, eventId) order at a time: exports are
// sorted by time already, or (Logs Insights, "sort @timestamp desc") hold at most 10,000 rows.
const sortBatch = 20000

// messageSink receives messages in input order, batched; it may keep the slice.
type messageSink func([]message) error

// readMessages streams the messages of a non-line input to sink.
func readMessages(d *decodedInput, sink messageSink) error {
	b := &batcher{sink: sink}
	var err error
	switch d.format {
	case formatFilterEvents:
		err = readFilterEvents(d.r, b)
	case formatInsightsJSON:
		err = readInsightsJSON(d.r, b)
	case formatInsightsCSV:
		err = readInsightsCSV(d.r, b)
	case formatSubscription:
		err = readSubscription(d.r, b)
	case formatJSONArray:
		err = readJSONArray(d.r, b)
	case formatJSONStream:
		err = readJSONStream(d.r, b)
	default:
		err = fmt.Errorf("format %v has no message reader", d.format)
	}
	if ferr := b.flush(); err == nil {
		err = ferr
	}
	return err
}

type batcher struct {
	sink messageSink
	buf  []message
	n    int64
}

func (b *batcher) add(m message) error {
	b.n++
	m.loc = b.n
	b.buf = append(b.buf, m)
	if len(b.buf) >= sortBatch {
		return b.flush()
	}
	return nil
}

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
	b.buf = nil
	return b.sink(out)
}

type cwEvent struct {
	LogStreamName string `json:"logStreamName"`
	Timestamp     int64  `json:"timestamp"`
	Message       string `json:"message"`
	EventID       string `json:"eventId"`
	ID            string `json:"id"` // subscription payloads call it id
}

// readFilterEvents reads one or more concatenated `aws logs filter-log-events` documents.
func readFilterEvents(r io.Reader, b *batcher) error {
	dec := json.NewDecoder(r)
	for {
		err := walkObject(dec, func(key string) error {
			if key != "events" {
				return skipJSON(dec)
			}
			return walkArray(dec, func() error {
				var ev cwEvent
				if err := dec.Decode(&ev); err != nil {
					return err
				}
				return b.add(message{data: []byte(ev.Message), exportTime: ev.Timestamp * 1e6, eventID: ev.EventID})
			})
		})
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("filter-log-events document: %w", err)
		}
	}
}

// readInsightsJSON reads `aws logs get-query-results` output ({"results":[[{field,value}]]})
// or the console's JSON export (an array of objects keyed by field name).
func readInsightsJSON(r io.Reader, b *batcher) error {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("logs insights results: %w", err)
	}
	row := func(fields map[string]string) error {
		msg, ok := fields["@message"]
		if !ok {
			return errors.New("logs insights row without an @message field")
		}
		ts, _ := parseInsightsTime(fields["@timestamp"])
		return b.add(message{data: []byte(msg), exportTime: ts, eventID: fields["@ptr"]})
	}
	switch tok {
	case json.Delim('['):
		for dec.More() {
			var fields map[string]any
			if err := dec.Decode(&fields); err != nil {
				return fmt.Errorf("logs insights export: %w", err)
			}
			str := map[string]string{}
			for k, v := range fields {
				if s, ok := v.(string); ok {
					str[k] = s
				}
			}
			if err := row(str); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	case json.Delim('{'):
		// One document, or several concatenated (one per page of get-query-results).
		for {
			err := walkObjectBody(dec, func(key string) error {
				if key != "results" {
					return skipJSON(dec)
				}
				return walkArray(dec, func() error {
					var cells []struct{ Field, Value string }
					if err := dec.Decode(&cells); err != nil {
						return err
					}
					fields := make(map[string]string, len(cells))
					for _, c := range cells {
						fields[c.Field] = c.Value
					}
					return row(fields)
				})
			})
			if err != nil {
				return fmt.Errorf("logs insights results: %w", err)
			}
			if err := walkObject(dec, nil); err == io.EOF {
				return nil
			} else if err != nil {
				return fmt.Errorf("logs insights results: %w", err)
			}
		}
	}
	return fmt.Errorf("logs insights results: unexpected %v", tok)
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
// (@logStream,@timestamp,@message), then one row per event with the JSON CSV-quoted.
func readInsightsCSV(r io.Reader, b *batcher) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
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
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("logs insights CSV: %w", err)
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

type subscriptionPayload struct {
	MessageType string    `json:"messageType"`
	LogGroup    string    `json:"logGroup"`
	LogStream   string    `json:"logStream"`
	LogEvents   []cwEvent `json:"logEvents"`
}

// readSubscription reads CloudWatch Logs subscription payloads: a stream of JSON documents
// (what Firehose writes to S3 once gunzipped), or lines of base64 each holding one gzipped
// payload (what a Kinesis consumer or a Lambda test event shows).
func readSubscription(r io.Reader, b *batcher) error {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(4)
	if string(head) == "H4sI" {
		sc := bufio.NewReader(br)
		n := 0
		for {
			line, err := sc.ReadBytes('\n')
			line = bytes.TrimSpace(line)
			if len(line) > 0 {
				n++
				raw, derr := base64.StdEncoding.DecodeString(string(line))
				if derr != nil {
					return fmt.Errorf("subscription payload %d: base64: %w", n, derr)
				}
				zr, zerr := gzip.NewReader(bytes.NewReader(raw))
				if zerr != nil {
					return fmt.Errorf("subscription payload %d: gzip: %w", n, zerr)
				}
				if perr := readSubscriptionJSON(zr, b); perr != nil {
					return fmt.Errorf("subscription payload %d: %w", n, perr)
				}
			}
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	return readSubscriptionJSON(br, b)
}

func readSubscriptionJSON(r io.Reader, b *batcher) error {
	dec := json.NewDecoder(r)
	for {
		var p subscriptionPayload
		err := dec.Decode(&p)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("subscription payload: %w", err)
		}
		if p.MessageType == "CONTROL_MESSAGE" {
			continue
		}
		for _, ev := range p.LogEvents {
			id := ev.ID
			if id == "" {
				id = ev.EventID
			}
			if err := b.add(message{data: []byte(ev.Message), exportTime: ev.Timestamp * 1e6, eventID: id}); err != nil {
				return err
			}
		}
	}
}

// readJSONArray reads a JSON array whose elements are audit events (as `jq -s` writes).
func readJSONArray(r io.Reader, b *batcher) error {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("expected a JSON array, found %v", tok)
	}
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("JSON array element %d: %w", b.n+1, err)
		}
		if err := b.add(message{data: raw}); err != nil {
			return err
		}
	}
	_, err = dec.Token()
	return err
}

// readJSONStream reads concatenated JSON objects, however they are laid out.
func readJSONStream(r io.Reader, b *batcher) error {
	dec := json.NewDecoder(r)
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("JSON object %d: %w", b.n+1, err)
		}
		if err := b.add(message{data: raw}); err != nil {
			return err
		}
	}
}

// walkObject reads a whole JSON object from dec, calling fn for each key with the decoder
// positioned on its value; fn must consume the value. io.EOF means no more documents.
func walkObject(dec *json.Decoder, fn func(key string) error) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("expected a JSON object, found %v", tok)
	}
	if fn == nil {
		return nil
	}
	return walkObjectBody(dec, fn)
}

func walkObjectBody(dec *json.Decoder, fn func(key string) error) error {
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if err := fn(key); err != nil {
			return err
		}
	}
	_, err := dec.Token() // '}'
	return err
}

func walkArray(dec *json.Decoder, fn func() error) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil { // null
		return nil
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("expected a JSON array, found %v", tok)
	}
	for dec.More() {
		if err := fn(); err != nil {
			return err
		}
	}
	_, err = dec.Token()
	return err
}

func skipJSON(dec *json.Decoder) error {
	var raw json.RawMessage
	return dec.Decode(&raw)
}
