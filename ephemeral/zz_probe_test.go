package ephemeral

import (
	"bufio"
	"fmt"
	"os"
	"testing"
)

func TestProbe(t *testing.T) {
	f, err := os.Open(os.Getenv("PROBE"))
	if err != nil {
		t.Skip()
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fmt.Printf("%-5v %s\n", Is(line), line)
	}
}
