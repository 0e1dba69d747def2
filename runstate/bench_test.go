package runstate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The write-back runs every second for the whole run: a look at folders
// where nothing changed must cost next to nothing, however many files the
// workbench holds. Compare the two sizes' ns/op: the cost is stat calls.
func BenchmarkSyncWithNothingChanged(b *testing.B) {
	for _, files := range []int{100, 2000} {
		b.Run(fmt.Sprintf("%d files", files), func(b *testing.B) {
			ctx := context.Background()
			d := b.TempDir()
			p := Places{RunDir: filepath.Join(d, "runs"), Workbench: filepath.Join(d, ".flower")}
			for i := range files {
				path := filepath.Join(p[Workbench], "spill", fmt.Sprintf("%04d.txt", i))
				os.MkdirAll(filepath.Dir(path), 0o700)
				os.WriteFile(path, []byte(fmt.Sprintf("output %d\n", i)), 0o600)
			}
			// A run's files are mostly older than the racy window; here
			// they are made so at once (a younger file is read each time).
			shortRacyWindow(b, 10*time.Millisecond)
			time.Sleep(20 * time.Millisecond)
			m, err := Open(ctx, newMem(), "r", p, Options{SyncEvery: 1 << 40})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close(ctx)
			if err := m.Sync(ctx); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if err := m.Sync(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
