package catalog

import (
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"go.yaml.in/yaml/v3"
)

// The embedded default catalog's YAML files are also embedded already parsed: the
// node trees the YAML parser makes of them (about half of loading the default
// catalog's CPU), keyed by the SHA-256 of the file's bytes. A file is read from its
// tree only when its bytes hash to the key, so the trees are never a second source
// of the catalog: an edited file whose tree was not regenerated is parsed as any
// other (and TestDefaultNodeCache fails until `go test ./catalog -run
// TestDefaultNodeCache -update` regenerates defaultnodes.bin). docs/performance.md
// "The default catalog, parsed once".

//go:embed defaultnodes.bin
var defaultNodes string

// nodeCacheMagic begins an encoded node cache. The layout (unsigned varints, strings
// as a length and bytes): the number of files, then per file its SHA-256 (32 bytes),
// the length of its part and the part: the number of documents and of nodes, then each
// document's nodes depth first, each as kind, style, tag, value, anchor, head, line and
// foot comments, line, column, its alias's node (0 for none, else 1 + that node's
// number in the file, depth first) and the number of its content nodes.
const nodeCacheMagic = "agentproof-yaml-nodes-1\n"

// cachedDocs returns the document nodes of the YAML file whose bytes are data when the
// embedded node cache holds them (each a yaml.DocumentNode, as yaml.Decoder.Decode
// makes them), false otherwise.
func cachedDocs(data []byte) ([]*yaml.Node, bool) {
	files, err := nodeCache()
	if err != nil || len(files) == 0 {
		return nil, false
	}
	sum := sha256.Sum256(data)
	at, ok := files[sum]
	if !ok {
		return nil, false
	}
	docs, err := decodeNodes(defaultNodes[at:])
	if err != nil {
		return nil, false
	}
	return docs, true
}

// nodeCache indexes the embedded cache: the offset of each file's encoded documents by
// the SHA-256 of its bytes. Read once.
var nodeCache = sync.OnceValues(func() (map[[32]byte]int, error) { return indexNodes(defaultNodes) })

// errNodeCache is the error of a node cache that does not decode.
var errNodeCache = errors.New("catalog: malformed node cache")

// encodeNodes encodes a node cache of files: for each, the SHA-256 of its bytes and its
// document nodes (from yaml.Decoder.Decode), in order. Error: an alias whose node is
// not before it (which the parser never makes).
func encodeNodes(files map[[32]byte][]*yaml.Node, order [][32]byte) ([]byte, error) {
	b := []byte(nodeCacheMagic)
	b = binary.AppendUvarint(b, uint64(len(order)))
	for _, sum := range order {
		docs := files[sum]
		var body []byte
		body = binary.AppendUvarint(body, uint64(len(docs)))
		body = binary.AppendUvarint(body, uint64(countNodes(docs)))
		var err error
		e := &nodeEncoder{num: map[*yaml.Node]int{}}
		for _, d := range docs {
			if body, err = e.appendNode(body, d); err != nil {
				return nil, err
			}
		}
		b = append(b, sum[:]...)
		b = binary.AppendUvarint(b, uint64(len(body)))
		b = append(b, body...)
	}
	return b, nil
}

// countNodes is the number of nodes in docs' trees.
func countNodes(docs []*yaml.Node) int {
	n := 0
	for _, d := range docs {
		n += 1 + countNodes(d.Content)
	}
	return n
}

// nodeEncoder numbers a file's nodes depth first, so that an alias can name its
// anchored node (which YAML puts before it) by number.
type nodeEncoder struct {
	num  map[*yaml.Node]int
	next int
}

// appendNode appends n and, depth first, its content.
func (e *nodeEncoder) appendNode(b []byte, n *yaml.Node) ([]byte, error) {
	e.num[n] = e.next
	e.next++
	alias := 0
	if n.Alias != nil {
		k, ok := e.num[n.Alias]
		if !ok {
			return nil, fmt.Errorf("catalog: node cache: the alias at line %d names a node not before it", n.Line)
		}
		alias = k + 1
	}
	b = binary.AppendUvarint(b, uint64(n.Kind))
	b = binary.AppendUvarint(b, uint64(n.Style))
	for _, s := range [...]string{n.Tag, n.Value, n.Anchor, n.HeadComment, n.LineComment, n.FootComment} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(n.Line))
	b = binary.AppendUvarint(b, uint64(n.Column))
	b = binary.AppendUvarint(b, uint64(alias))
	b = binary.AppendUvarint(b, uint64(len(n.Content)))
	var err error
	for _, c := range n.Content {
		if b, err = e.appendNode(b, c); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// indexNodes reads the table of a node cache: each file's SHA-256 and the offset of its
// encoded documents. Error: errNodeCache.
func indexNodes(s string) (map[[32]byte]int, error) {
	r := nodeReader{s: s}
	if len(s) < len(nodeCacheMagic) || s[:len(nodeCacheMagic)] != nodeCacheMagic {
		return nil, errNodeCache
	}
	r.at = len(nodeCacheMagic)
	n := r.uvarint()
	out := make(map[[32]byte]int, min(n, 64))
	for range n {
		var sum [32]byte
		copy(sum[:], r.bytes(32))
		size := r.uvarint()
		out[sum] = r.at
		r.bytes(size)
		if r.err != nil {
			return nil, r.err
		}
	}
	return out, r.err
}

// decodeNodes decodes one file's documents from the start of s (an offset indexNodes
// gave). The nodes are allocated together and their strings share s's memory. Error:
// errNodeCache.
func decodeNodes(s string) ([]*yaml.Node, error) {
	r := nodeReader{s: s}
	ndocs, nnodes := r.uvarint(), r.uvarint()
	if r.err != nil || ndocs > nnodes || nnodes > len(s) { // every node takes at least one byte
		return nil, errNodeCache
	}
	r.nodes = make([]yaml.Node, nnodes)
	r.all = r.nodes
	r.ptrs = make([]*yaml.Node, nnodes)
	docs := r.take(ndocs)
	for i := range docs {
		docs[i] = r.node(0)
	}
	if r.err != nil {
		return nil, r.err
	}
	return docs, nil
}

// nodeReader decodes a node cache; the first error sticks and later reads return zero
// values. nodes and ptrs are the slabs decodeNodes allocates its nodes and their
// content slices from.
type nodeReader struct {
	s     string
	at    int
	err   error
	nodes []yaml.Node // the nodes not yet decoded
	all   []yaml.Node // every node, numbered as nodeEncoder numbers them
	ptrs  []*yaml.Node
}

// maxNodeDepth bounds the nesting decodeNodes follows (the YAML parser's own limit is
// lower).
const maxNodeDepth = 10_000

// take returns the next k pointers of the content slab (nil and an error when it is
// exhausted).
func (r *nodeReader) take(k int) []*yaml.Node {
	if k > len(r.ptrs) {
		r.err = errNodeCache
		return nil
	}
	p := r.ptrs[:k:k]
	r.ptrs = r.ptrs[k:]
	return p
}

func (r *nodeReader) node(depth int) *yaml.Node {
	if depth > maxNodeDepth || len(r.nodes) == 0 {
		r.err = errNodeCache
	}
	if r.err != nil {
		return &yaml.Node{}
	}
	n := &r.nodes[0]
	r.nodes = r.nodes[1:]
	n.Kind, n.Style = yaml.Kind(r.uvarint()), yaml.Style(r.uvarint())
	n.Tag, n.Value, n.Anchor = r.string(), r.string(), r.string()
	n.HeadComment, n.LineComment, n.FootComment = r.string(), r.string(), r.string()
	n.Line, n.Column = r.uvarint(), r.uvarint()
	if a := r.uvarint(); a > 0 {
		if k := len(r.all) - len(r.nodes) - 1; a > k { // n's own number is k
			r.err = errNodeCache
			return n
		}
		n.Alias = &r.all[a-1]
	}
	if k := r.uvarint(); k > 0 {
		n.Content = r.take(k)
		for i := range n.Content {
			n.Content[i] = r.node(depth + 1)
		}
	}
	return n
}

// uvarint reads an unsigned varint below 2³¹.
func (r *nodeReader) uvarint() int {
	var v uint64
	for shift := 0; r.err == nil; shift += 7 {
		if r.at >= len(r.s) || shift > 28 {
			r.err = errNodeCache
			break
		}
		c := r.s[r.at]
		r.at++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			if v >= 1<<31 {
				r.err = errNodeCache
			}
			break
		}
	}
	if r.err != nil {
		return 0
	}
	return int(v)
}

// string reads a length and that many bytes.
func (r *nodeReader) string() string { return r.bytes(r.uvarint()) }

// bytes reads n bytes.
func (r *nodeReader) bytes(n int) string {
	if r.err != nil || n > len(r.s)-r.at {
		r.err = errNodeCache
		return ""
	}
	s := r.s[r.at : r.at+n]
	r.at += n
	return s
}
