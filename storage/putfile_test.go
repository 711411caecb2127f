package storage_test

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/dds-project/dds/storage/storagetest"
)

// PutFile of the local driver stores a finished file (an export's
// archive) under a key, replacing what was there, with its content type;
// a file from elsewhere is copied in, and the caller's name stays
// removable either way.
func TestLocalPutFile(t *testing.T) {
	ctx := context.Background()
	l := storagetest.Local(t)
	check := func(key, want string) {
		t.Helper()
		r, err := l.Open(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		b, _ := io.ReadAll(r)
		if string(b) != want {
			t.Fatalf("%s holds %q, want %q", key, b, want)
		}
		if info, err := l.Head(ctx, key); err != nil || info.ContentType != "application/zip" || info.Size != int64(len(want)) {
			t.Fatalf("head %s: %+v %v", key, info, err)
		}
	}
	write := func(f *os.File, s string) {
		t.Helper()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}

	f, err := l.CreateTemp("export-*.zip")
	if err != nil {
		t.Fatal(err)
	}
	write(f, "first archive")
	if err := l.PutFile(ctx, "tenant-archives/a.zip", "application/zip", f, 13); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Remove(f.Name()); err != nil {
		t.Fatal(err)
	}
	check("tenant-archives/a.zip", "first archive")

	// Written again (a retried export): replaced. From another
	// directory: copied.
	g, err := os.CreateTemp(t.TempDir(), "export-*.zip")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	write(g, "second")
	if err := l.PutFile(ctx, "tenant-archives/a.zip", "application/zip", g, 6); err != nil {
		t.Fatal(err)
	}
	check("tenant-archives/a.zip", "second")

	// A size that is not the file's is refused and stores nothing.
	if err := l.PutFile(ctx, "tenant-archives/b.zip", "application/zip", g, 7); err == nil {
		t.Fatal("PutFile stored a file of another size")
	}
	if _, err := l.Head(ctx, "tenant-archives/b.zip"); err == nil {
		t.Fatal("a refused PutFile stored the object")
	}
}

// A temporary file a dead process left (a worker killed mid-export) is
// removed by the next CreateTemp once it has gone unmodified for an hour;
// a younger one, maybe another export's archive being written, stays.
func TestCreateTempRemovesDeadProcessesFiles(t *testing.T) {
	l := storagetest.Local(t)
	first, err := l.CreateTemp("dds-export-*.zip")
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	young, err := l.CreateTemp("dds-export-*.zip")
	if err != nil {
		t.Fatal(err)
	}
	young.Close()
	old := time.Now().Add(-61 * time.Minute)
	if err := os.Chtimes(first.Name(), old, old); err != nil {
		t.Fatal(err)
	}
	next, err := l.CreateTemp("dds-export-*.zip")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(next.Name())
	next.Close()
	if _, err := os.Stat(first.Name()); !os.IsNotExist(err) {
		t.Fatalf("the hour-old temporary file is still there (%v)", err)
	}
	for _, f := range []*os.File{young, next} {
		if _, err := os.Stat(f.Name()); err != nil {
			t.Fatalf("%s: %v", f.Name(), err)
		}
	}
}
