package awsserver

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The Query protocol EC2 and Auto Scaling share: a POSTed form of Action, Version and the
// action's parameters, answered with XML.

// queryParams are the parameters of one action of a Query protocol: the plain ones and the
// flattened lists (Name.N..., Name.member.N...). A parameter outside them is refused with
// UnknownParameter, as EC2 does, so that a request the SDK builds differently fails the tests.
type queryParams struct{ plain, lists []string }

// queryOperation is an action of a Query protocol: the parameters it understands and how it is
// served.
type queryOperation[Req any] struct {
	params queryParams
	operation[Req]
}

// decodeQueryForm reads a Query protocol request (EC2's, Auto Scaling's): a POSTed form whose
// Action is one of actions, of the API version given, with only the parameters that action
// understands (and DryRun).
func decodeQueryForm[Req any](r *http.Request, version string, actions map[string]queryOperation[Req]) (string, queryOperation[Req], url.Values, error) {
	var none queryOperation[Req]
	if r.Method != http.MethodPost {
		return "", none, nil, apiError("InvalidAction", "the Query protocol takes a POST of a form, not %s %s", r.Method, r.URL.Path)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return "", none, nil, apiError("InvalidRequest", "reading the request: %v", err)
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return "", none, nil, apiError("InvalidRequest", "the body is not a form: %v", err)
	}
	op := form.Get("Action")
	action, ok := actions[op]
	if !ok {
		return op, none, nil, apiError("InvalidAction", "The action %s is not valid for this web service.", op)
	}
	if v := form.Get("Version"); v != version {
		return op, none, nil, apiError("InvalidParameterValue", "Version %q is not %s", v, version)
	}
	for key := range form {
		head, _, _ := strings.Cut(key, ".")
		known := key == "Action" || key == "Version" || key == "DryRun"
		for _, p := range action.params.plain {
			known = known || key == p
		}
		for _, l := range action.params.lists {
			known = known || (head == l && key != l)
		}
		if !known {
			return op, none, nil, apiError("UnknownParameter", "The parameter %s is not recognized", key)
		}
	}
	return op, action, form, nil
}

func formString(form url.Values, key string) *string {
	if v, ok := form[key]; ok && len(v) > 0 {
		return &v[0]
	}
	return nil
}

func formInt32(form url.Values, key string) (*int32, error) {
	s := formString(form, key)
	if s == nil {
		return nil, nil
	}
	n, err := strconv.ParseInt(*s, 10, 32)
	if err != nil {
		return nil, apiError("InvalidParameterValue", "Invalid value '%s' for %s", *s, key)
	}
	v := int32(n)
	return &v, nil
}

// formList reads the flattened list prefix.1, prefix.2, ... (numbered from 1, without gaps).
func formList(form url.Values, prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := form[prefix+"."+strconv.Itoa(i)]
		if !ok {
			return out
		}
		out = append(out, v[0])
	}
}

func writeXML(w http.ResponseWriter, status int, v any) {
	body, err := xml.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	io.WriteString(w, xml.Header)
	w.Write(body)
}
