package jsonrpc

import "unicode/utf8"

// maxValidDepth is encoding/json's nesting limit: json.Valid refuses a text
// whose arrays and objects nest deeper.
const maxValidDepth = 10000

// plainString marks the bytes a JSON string may hold as they are: ASCII
// from 0x20 up, except the quote and the backslash.
var plainString = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// validMembers reports whether data is one JSON text in UTF-8: exactly
// json.Valid(data) && utf8.Valid(data) (FuzzValidUTF8JSON checks it), in one
// pass several times faster than those two. Bytes outside strings must be
// ASCII in valid JSON, so only strings are checked for UTF-8. When data is an
// object and member is not nil, it also calls member for each of its
// top-level members in order, with the raw key and where the value lies (as
// scanRaw does), during the same pass: a message is validated and its
// members located reading it once. The calls made before invalid JSON is
// found are not taken back: a caller must heed them only when validMembers
// reports true.
func validMembers(data []byte, member func(rawKey []byte, start, end int)) bool {
	var stackBuf [32]byte // '{' or '[' per open container
	stack := stackBuf[:0]
	var key []byte // the top-level member whose value is being read
	vstart := 0
	i := skipWS(data, 0)
	for {
		// A value starts at i.
		if i >= len(data) {
			return false
		}
		switch c := data[i]; {
		case c == '{' || c == '[':
			if len(stack) >= maxValidDepth {
				return false
			}
			stack = append(stack, c)
			i = skipWS(data, i+1)
			if i < len(data) && data[i] == c+2 { // '}' or ']'
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i = memberKey(data, i, len(stack) == 1 && member != nil, &key, &vstart); i < 0 {
					return false
				}
			}
			continue
		default:
			if i = validScalar(data, i); i < 0 {
				return false
			}
		}
		// A value ended at i: close containers until the next value.
		for {
			if len(stack) == 1 && key != nil {
				member(key, vstart, i) // the value of a top-level member ended
				key = nil
			}
			i = skipWS(data, i)
			if len(stack) == 0 {
				return i == len(data)
			}
			if i >= len(data) {
				return false
			}
			top := stack[len(stack)-1]
			if data[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if data[i] != ',' {
				return false
			}
			i = skipWS(data, i+1)
			if top == '{' {
				if i = memberKey(data, i, len(stack) == 1 && member != nil, &key, &vstart); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// validScalar checks the string, literal or number at data[i]; it returns
// where it ends, or -1.
func validScalar(data []byte, i int) int {
	switch data[i] {
	case '"':
		return validString(data, i)
	case 't':
		return validLiteral(data, i, "true")
	case 'f':
		return validLiteral(data, i, "false")
	case 'n':
		return validLiteral(data, i, "null")
	}
	return validNumber(data, i)
}

// memberKey checks an object member's key and colon at data[i], scanning
// the key once; it returns where the value starts, or -1. When record is
// set, *key is set to the raw key and *vstart to where its value starts.
func memberKey(data []byte, i int, record bool, key *[]byte, vstart *int) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	k := i
	if i = validString(data, i); i < 0 {
		return -1
	}
	rawKey := data[k:i]
	i = skipWS(data, i)
	if i >= len(data) || data[i] != ':' {
		return -1
	}
	i = skipWS(data, i+1)
	if record {
		*key, *vstart = rawKey, i
	}
	return i
}

// validString checks the string starting at data[i] (a quote) and returns
// the index past it, or -1.
func validString(data []byte, i int) int {
	j := i + 1
	for j < len(data) {
		c := data[j]
		if plainString[c] {
			j++
			continue
		}
		switch {
		case c == '"':
			return j + 1
		case c == '\\':
			if j+1 >= len(data) {
				return -1
			}
			switch data[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(data) || !isHex(data[j+2]) || !isHex(data[j+3]) || !isHex(data[j+4]) || !isHex(data[j+5]) {
					return -1
				}
				j += 6
			default:
				return -1
			}
		case c < 0x20:
			return -1
		default:
			r, size := utf8.DecodeRune(data[j:])
			if r == utf8.RuneError && size == 1 {
				return -1
			}
			j += size
		}
	}
	return -1
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// validLiteral checks that lit is at data[i] and returns the index past it,
// or -1.
func validLiteral(data []byte, i int, lit string) int {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// validNumber checks the number starting at data[i] and returns the index
// past it, or -1: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func validNumber(data []byte, i int) int {
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		return -1
	case data[i] == '0':
		i++
	case '1' <= data[i] && data[i] <= '9':
		i = digits(data, i+1)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		if j := digits(data, i+1); j > i+1 {
			i = j
		} else {
			return -1
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(data, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

// digits returns the index past the ASCII digits from data[i].
func digits(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	return i
}
