package vgpu

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Separators of the two encodings. A field that contained one of them would be split
// differently by every decoder, ours and upstream's, so encoders refuse such fields.
const (
	fieldSeparator     = ","
	recordTerminator   = ":"
	containerSeparator = ";"
)

// maxQuoted bounds how much offending text an error message repeats: annotation values can be
// hundreds of kilobytes long and a log line should stay readable.
const maxQuoted = 80

// quote renders offending text for an error message, shortened if it is long.
func quote(text string) string {
	if len(text) > maxQuoted {
		return strconv.Quote(text[:maxQuoted]) + "..."
	}
	return strconv.Quote(text)
}

func isDigits(text string) bool {
	if text == "" {
		return false
	}
	for i := 0; i < len(text); i++ {
		if text[i] < '0' || text[i] > '9' {
			return false
		}
	}
	return true
}

// parseNonNegative32 reads a decimal field of an annotation. Signs, spaces and anything
// beyond int32 are rejected: no writer produces them, so they mean the value is corrupt.
func parseNonNegative32(field, text string) (int32, error) {
	if !isDigits(text) {
		return 0, fmt.Errorf("%s %s: want a non-negative decimal integer", field, quote(text))
	}
	n, err := strconv.ParseInt(text, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s %s: larger than %d", field, quote(text), math.MaxInt32)
	}
	return int32(n), nil
}

// checkText refuses an empty field or one holding any of the characters in forbidden.
func checkText(field, text, forbidden string) error {
	if text == "" {
		return fmt.Errorf("%s is empty", field)
	}
	if i := strings.IndexAny(text, forbidden); i >= 0 {
		return fmt.Errorf("%s %s: must not contain %q", field, quote(text), text[i])
	}
	return nil
}

// checkUUID refuses text that cannot be a GPU UUID in either encoding. Brackets are reserved
// for MIG instance ids (migid.go) and white space never occurs in NVML UUIDs.
func checkUUID(field, text string) error {
	return checkText(field, text, fieldSeparator+recordTerminator+containerSeparator+"[] \t\r\n")
}
