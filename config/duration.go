package config

import (
	"errors"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// errNoUnit is the problem of a bare number given as a duration.
var errNoUnit = errors.New("a duration needs a unit (30s, 5m, 2h, 7d)")

// dayTerm is one "<number>d" term of a duration, such as 7d or 1.5d.
var dayTerm = regexp.MustCompile(`([0-9]*\.?[0-9]+)d`)

// ParseDuration reads a Go duration that may also count days ("7d",
// "1d12h"). A bare number is refused: "30" is not 30 nanoseconds.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, errNoUnit
	}
	var bad error
	hours := dayTerm.ReplaceAllStringFunc(s, func(term string) string {
		n, err := strconv.ParseFloat(strings.TrimSuffix(term, "d"), 64)
		if err != nil {
			bad = err
		}
		return strconv.FormatFloat(n*24, 'f', -1, 64) + "h"
	})
	if bad != nil {
		return 0, errors.New("invalid duration " + strconv.Quote(s))
	}
	d, err := time.ParseDuration(hours)
	if err != nil {
		return 0, errors.New("invalid duration " + strconv.Quote(s) + " (use 30s, 5m, 2h, 7d)")
	}
	return d, nil
}

// durationHook decodes every time.Duration of the configuration with
// ParseDuration. YAML numbers (ints, floats) are refused: they would
// otherwise be taken as nanoseconds.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeFor[time.Duration]() {
		return data, nil
	}
	switch from.Kind() {
	case reflect.String:
		return ParseDuration(reflect.ValueOf(data).String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return nil, errNoUnit
	}
	return data, nil
}
