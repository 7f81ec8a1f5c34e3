package pattern

import (
	"bytes"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"
)

// patternDoc defines the stream for senders of other languages.
const patternDoc = "../../docs/ring.md"

var docSeed7 = regexp.MustCompile("(?s)<!-- golden: pattern-seed-7 -->\n```\n(.*?)```")

// The bytes docs/ring.md shows for seed 7 are the stream's: the definition a
// sender in another language implements cannot drift from Fill.
func TestDocumentedBytes(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(patternDoc)
	if err != nil {
		t.Fatalf("read the pattern's definition: %v", err)
	}
	m := docSeed7.FindSubmatch(doc)
	if m == nil {
		t.Fatalf("%s shows no pattern-seed-7 example", patternDoc)
	}
	want, err := hex.DecodeString(strings.Join(strings.Fields(string(m[1])), ""))
	if err != nil || len(want) == 0 {
		t.Fatalf("the pattern-seed-7 example is not hex: %v", err)
	}
	got := make([]byte, len(want))
	Fill(got, 7, 0)
	if !bytes.Equal(got, want) {
		t.Fatalf("seed 7 begins\n%x\nthe documentation shows\n%x", got, want)
	}
}
