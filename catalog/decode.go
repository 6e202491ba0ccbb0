package catalog

import (
	"cmp"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/agentproof/agentproof/canonjson"
)

// decoder turns yaml.Nodes into catalog structs strictly: unknown keys, duplicate keys
// and wrong scalar types are problems (with the node's line and column), never ignored.
// It records the position of every decoded value in pos, keyed by the value's address
// (a *string for a string field, a *Suite for a suite), so validation can point at the
// exact line of a bad reference.
type decoder struct {
	file  string
	ps    *problems
	pos   map[any]Pos
	raw   map[any]*yaml.Node // free-form values (map[string]any fields, Metadata) → their node
	path  []pathSeg
	nodes int // nodes visited, aliases expanded; bounded by maxNodes
	over  bool
}

// pathSeg is one step of the path from the document root to the current value.
type pathSeg struct {
	key string
	idx int // used when key == ""
}

// maxNodes bounds the YAML nodes one file may expand to (aliases count every time they
// are followed), so that an alias bomb is a clear problem instead of unbounded work.
const maxNodes = 1_000_000

// mapEntry is the pos key of a map entry (maps' values are not addressable).
type mapEntry struct {
	m   uintptr
	key string
}

func (d *decoder) at(n *yaml.Node) Pos { return Pos{File: d.file, Line: n.Line, Column: n.Column} }

func (d *decoder) pathString() string {
	var b strings.Builder
	for _, s := range d.path {
		if s.key == "" {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.idx))
			b.WriteByte(']')
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	if b.Len() == 0 {
		return "document"
	}
	return b.String()
}

func (d *decoder) errorf(n *yaml.Node, format string, args ...any) {
	args = append([]any{d.pathString()}, args...)
	d.ps.add(d.at(n), "%s: "+format, args...)
}

// resolve follows aliases and counts the node against the budget; it returns nil when
// the budget is exhausted (the problem is reported once).
func (d *decoder) resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	d.nodes++
	if d.nodes > maxNodes {
		if !d.over {
			d.over = true
			d.ps.add(d.at(n), "file expands to more than %d YAML nodes (alias expansion included); split it or remove aliases", maxNodes)
		}
		return nil
	}
	return n
}

var (
	metadataType = reflect.TypeFor[Metadata]()
	anyType      = reflect.TypeFor[any]()
)

// kindName describes a node for "expected X, got Y" messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "…"
		}
		return n.ShortTag() + " " + strconv.Quote(v)
	}
	return "an unexpected node"
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// decode decodes n into the addressable value v: Metadata and any values keep the
// node as they are (see decodeOpaque), a null leaves v zero, and the rest decodes by
// v's kind. Each value's position is recorded; problems are recorded on d, never
// returned.
func (d *decoder) decode(n *yaml.Node, v reflect.Value) {
	n = d.resolve(n)
	if n == nil {
		return
	}
	if v.CanAddr() {
		d.pos[v.Addr().Interface()] = d.at(n)
	}
	t := v.Type()
	if v.CanAddr() && (t == metadataType || t == anyType || (t.Kind() == reflect.Map && t.Elem() == anyType)) {
		d.raw[v.Addr().Interface()] = n
	}
	if t == metadataType || t == anyType {
		d.decodeOpaque(n, v)
		return
	}
	if isNull(n) {
		return // absent: zero value
	}
	switch t.Kind() {
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		d.decode(n, p.Elem())
		v.Set(p)
	case reflect.Struct:
		d.decodeStruct(n, v)
	case reflect.Slice:
		d.decodeSlice(n, v)
	case reflect.Map:
		d.decodeMap(n, v)
	default:
		d.decodeScalar(n, v)
	}
}

// decodeOpaque decodes n into v of type Metadata (a mapping kept in declaration
// order; null leaves it zero) or any (the node's plain value).
func (d *decoder) decodeOpaque(n *yaml.Node, v reflect.Value) {
	if v.Type() == anyType {
		if x := d.plain(n); x != nil {
			v.Set(reflect.ValueOf(x))
		} else {
			v.Set(reflect.Zero(anyType))
		}
		return
	}
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, "expected a mapping, got %s", kindName(n))
		return
	}
	obj, _ := d.ordered(n).(canonjson.Object)
	v.Set(reflect.ValueOf(Metadata{Value: obj}))
}

// decodeSlice decodes the sequence n into the slice v, one element per item.
func (d *decoder) decodeSlice(n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, "expected a sequence, got %s", kindName(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	v.Set(s)
	for i, c := range n.Content {
		d.path = append(d.path, pathSeg{idx: i})
		d.decode(c, v.Index(i))
		d.path = d.path[:len(d.path)-1]
	}
}

// decodeMap decodes the mapping n into the map v (string-like keys); a non-scalar or
// duplicate key is a problem and its entry is skipped. Each key's position is
// recorded.
func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value) {
	t := v.Type()
	if n.Kind != yaml.MappingNode {
		d.errorf(n, "expected a mapping, got %s", kindName(n))
		return
	}
	m := reflect.MakeMapWithSize(t, len(n.Content)/2)
	v.Set(m)
	d.entries(n, "a string key", func(k, val *yaml.Node) {
		if m.MapIndex(reflect.ValueOf(k.Value).Convert(t.Key())).IsValid() {
			d.errorf(k, "duplicate key %q", k.Value)
			return
		}
		d.pos[mapEntry{m.Pointer(), k.Value}] = d.at(k)
		e := reflect.New(t.Elem()).Elem()
		d.within(k.Value, func() { d.decode(val, e) })
		m.SetMapIndex(reflect.ValueOf(k.Value).Convert(t.Key()), e)
	})
}

// entries calls f with the resolved key and the value of every entry of the mapping
// n, in order. A key that is not a scalar is a problem ("expected <want>, got …")
// and its entry is skipped. It returns false, having called f for the entries before
// it, at a key that does not resolve (resolve reported why).
func (d *decoder) entries(n *yaml.Node, want string, f func(k, val *yaml.Node)) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := d.resolve(n.Content[i])
		if k == nil {
			return false
		}
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, "expected %s, got %s", want, kindName(k))
			continue
		}
		f(k, n.Content[i+1])
	}
	return true
}

// within runs f with key appended to the decoder's path (the place its problems name).
func (d *decoder) within(key string, f func()) {
	d.path = append(d.path, pathSeg{key: key})
	f()
	d.path = d.path[:len(d.path)-1]
}

// decodeScalar decodes the scalar n into v of a string (a YAML string or timestamp),
// bool, integer (within v's range) or float64 kind (an integer or float); another
// node or kind is a problem.
func (d *decoder) decodeScalar(n *yaml.Node, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!timestamp") {
			d.errorf(n, "expected a string, got %s", kindName(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			d.errorf(n, "expected true or false, got %s", kindName(n))
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64, reflect.Int32:
		var i int64
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil || v.OverflowInt(i) {
			d.errorf(n, "expected an integer, got %s", kindName(n))
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		var f float64
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") || n.Decode(&f) != nil {
			d.errorf(n, "expected a number, got %s", kindName(n))
			return
		}
		v.SetFloat(f)
	default:
		d.errorf(n, "internal: cannot decode into %s", v.Type())
	}
}

// fieldSet is the yaml keys of a struct type, in declaration order.
type fieldSet struct {
	index map[string]int
	names []string
}

var fieldSets sync.Map // reflect.Type → *fieldSet

func fieldsOf(t reflect.Type) *fieldSet {
	if fs, ok := fieldSets.Load(t); ok {
		return fs.(*fieldSet)
	}
	if t.NumField() >= 64 {
		panic("catalog: decodeStruct tracks fields in a uint64; " + t.String() + " has too many")
	}
	fs := &fieldSet{index: map[string]int{}}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || name == "" {
			continue
		}
		fs.index[name] = i
		fs.names = append(fs.names, name)
	}
	actual, _ := fieldSets.LoadOrStore(t, fs)
	return actual.(*fieldSet)
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, "expected a mapping, got %s", kindName(n))
		return
	}
	fs := fieldsOf(v.Type())
	var seen uint64 // bit i: field i was set (catalog structs have fewer than 64 fields)
	d.entries(n, "a key", func(k, val *yaml.Node) {
		idx, ok := fs.index[k.Value]
		if !ok {
			if near := Suggest(k.Value, fs.names); len(near) > 0 {
				d.errorf(k, "unknown key %q (did you mean %s? known keys: %s)", k.Value, strings.Join(near, " or "), strings.Join(fs.names, ", "))
			} else {
				d.errorf(k, "unknown key %q (known keys: %s)", k.Value, strings.Join(fs.names, ", "))
			}
			return
		}
		if seen&(1<<idx) != 0 {
			d.errorf(k, "duplicate key %q", k.Value)
			return
		}
		seen |= 1 << idx
		d.within(k.Value, func() { d.decode(val, v.Field(idx)) })
	})
}

// plain converts a node to a JSON-like Go value: map[string]any, []any, string, int,
// float64, bool or nil. Non-string keys and duplicate keys are problems.
func (d *decoder) plain(n *yaml.Node) any {
	return d.convert(n, false)
}

// ordered is plain with mappings as canonjson.Object (declaration order kept) and
// every number as float64, as JavaScript would hold it.
func (d *decoder) ordered(n *yaml.Node) any {
	return d.convert(n, true)
}

// convert is plain (ordered false) or ordered (ordered true) of n; problems are
// recorded on d and the value in question is nil.
func (d *decoder) convert(n *yaml.Node, ordered bool) any {
	n = d.resolve(n)
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		return d.convertMapping(n, ordered)
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			d.path = append(d.path, pathSeg{idx: i})
			out[i] = d.convert(c, ordered)
			d.path = d.path[:len(d.path)-1]
		}
		return out
	case yaml.ScalarNode:
		return d.convertScalar(n, ordered)
	}
	d.errorf(n, "unsupported YAML node %s", kindName(n))
	return nil
}

// convertMapping converts the mapping n: a map[string]any, or when ordered a
// canonjson.Object in JavaScript's property order. A null or non-scalar key, or a
// duplicate one, is a problem and its entry is skipped; nil when a key does not
// resolve.
func (d *decoder) convertMapping(n *yaml.Node, ordered bool) any {
	var obj canonjson.Object
	var m map[string]any
	if ordered {
		obj = make(canonjson.Object, 0, len(n.Content)/2)
	} else {
		m = make(map[string]any, len(n.Content)/2)
	}
	complete := d.entries(n, "a string key", func(k, v *yaml.Node) {
		if k.ShortTag() == "!!null" {
			d.errorf(k, "expected a string key, got %s", kindName(k))
			return
		}
		dup := false
		if ordered {
			dup = slices.ContainsFunc(obj, func(m canonjson.Member) bool { return m.Key == k.Value })
		} else {
			_, dup = m[k.Value]
		}
		if dup {
			d.errorf(k, "duplicate key %q", k.Value)
			return
		}
		var val any
		d.within(k.Value, func() { val = d.convert(v, ordered) })
		if ordered {
			obj = append(obj, canonjson.Member{Key: k.Value, Value: val})
		} else {
			m[k.Value] = val
		}
	})
	if !complete {
		return nil
	}
	if ordered {
		return jsPropertyOrder(obj)
	}
	return m
}

// convertScalar converts the scalar n: nil, a bool, an int (a float64 when ordered or
// beyond ±2^53), a float64 (NaN and infinities are problems, -0 is 0), or the text of
// a string, timestamp, binary or merge key. Another tag is a problem (nil).
func (d *decoder) convertScalar(n *yaml.Node, ordered bool) any {
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			return b
		}
	case "!!int":
		var i int64
		if n.Decode(&i) == nil {
			if ordered || i > 1<<53 || i < -(1<<53) {
				return float64(i)
			}
			return int(i)
		}
		var f float64
		if n.Decode(&f) == nil {
			return f
		}
	case "!!float":
		var f float64
		if n.Decode(&f) == nil {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				d.errorf(n, "%s is not a JSON number", n.Value)
				return nil
			}
			if f == 0 {
				return float64(0) // JSON.stringify(-0) is "0"
			}
			return f
		}
	case "!!str", "!!timestamp", "!!binary", "!!merge":
		return n.Value
	}
	d.errorf(n, "unsupported scalar %s", kindName(n))
	return nil
}

// reflectValue returns the addressable value p points to.
func reflectValue(p any) reflect.Value { return reflect.ValueOf(p).Elem() }

// jsPropertyOrder reorders an object's members as a JavaScript object would hold them:
// keys that are array indices (canonical decimal integers below 2^32−1) first, in
// ascending numeric order, then the other keys in insertion order. JSON.stringify
// emits members in that order, so the fingerprint must too.
func jsPropertyOrder(obj canonjson.Object) canonjson.Object {
	var idx, rest canonjson.Object
	for _, m := range obj {
		if isArrayIndex(m.Key) {
			idx = append(idx, m)
		} else {
			rest = append(rest, m)
		}
	}
	if len(idx) == 0 {
		return obj
	}
	slices.SortStableFunc(idx, func(a, b canonjson.Member) int {
		x, _ := strconv.ParseUint(a.Key, 10, 64)
		y, _ := strconv.ParseUint(b.Key, 10, 64)
		return cmp.Compare(x, y)
	})
	return append(idx, rest...)
}

func isArrayIndex(k string) bool {
	if k == "" || len(k) > 10 || (len(k) > 1 && k[0] == '0') {
		return false
	}
	n, err := strconv.ParseUint(k, 10, 64)
	return err == nil && n < 1<<32-1
}
