package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/informerdb/informerdb/indexer"
)

// TestCompactRefusesOtherURLs checks that compact, which works on bolt
// files, says so for a URL of another backend or one with parameters,
// instead of looking for a file named after the URL ("not found: stat
// /cwd/badger:/dir").
func TestCompactRefusesOtherURLs(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "c.db")
	fill(t, "bolt://"+db, 3, "5")
	for _, tc := range []struct {
		arg, want string
	}{
		{"badger://" + filepath.Join(dir, "b"), "bolt"},
		{"memory://" + filepath.Join(dir, "m.snap"), "bolt"},
		{"bolt://" + db + "?lock_timeout=1s", "--lock-timeout"},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			code, _, stderr := cli(t, "compact", tc.arg)
			if code != exitUsage {
				t.Errorf("exit %d, want %d (usage): %s", code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, "compact") || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "not found") {
				t.Errorf("error %q: want one naming compact and %q, not a missing file", stderr, tc.want)
			}
		})
	}
	// A bolt URL without parameters is still a bolt file.
	if code, out, stderr := cli(t, "compact", "bolt://"+db); code != exitOK || !strings.Contains(out, "Compacted") {
		t.Errorf("compact bolt://%s: exit %d: %s%s", db, code, out, stderr)
	}
}

// TestRekeyBadTargets checks that rekey fails, naming the cause, for a
// --store the database lacks (it printed nothing and exited 0, so a typo
// left a store unencrypted while the user believed it sealed) and for a
// snapshot file (which it read in full before failing on an "unknown
// scheme """).
func TestRekeyBadTargets(t *testing.T) {
	dir := t.TempDir()
	db := "bolt://" + filepath.Join(dir, "cache.db")
	fill(t, db, 3, "5")
	keyFile := filepath.Join(dir, "k")
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(make([]byte, indexer.KeySize))), 0o600); err != nil {
		t.Fatal(err)
	}
	_, file := savedFile(t, 2)

	code, out, stderr := cli(t, "rekey", db, "--key", keyFile, "--store", "v1/typo")
	if code == exitOK || !strings.Contains(stderr, "v1/typo") || !strings.Contains(stderr, "rekey") {
		t.Errorf("rekey --store v1/typo: exit %d, stdout %q, stderr %q: want a failure naming rekey and the store", code, out, stderr)
	}
	before := statusJSON(t, db).Store(podsName)
	if before == nil || before.Info.Codec != "protobuf" {
		t.Fatalf("the refused rekey changed the store: %+v", before)
	}

	code, _, stderr = cli(t, "rekey", file, "--key", keyFile)
	if code != exitUsage || !strings.Contains(stderr, "is a snapshot file, not a database") {
		t.Errorf("rekey of a snapshot file: exit %d (%s), want %d saying it is not a database", code, stderr, exitUsage)
	}
}

// An unknown command is a usage error (exit 2) naming it; so is no
// command, which prints the usage on stderr (it exited 0, so a script that
// lost its arguments went on as if the command had run).
func TestUnknownCommand(t *testing.T) {
	code, _, stderr := cli(t, "verfy", "x")
	if code != exitUsage || !strings.Contains(stderr, `unknown command "verfy"`) {
		t.Errorf("unknown command: exit %d (%s); want %d naming it", code, stderr, exitUsage)
	}
	code, out, stderr := cli(t)
	if code != exitUsage || !strings.Contains(stderr, "Usage:") || !strings.Contains(stderr, "no command") || out != "" {
		t.Errorf("no command: exit %d, stdout %q, stderr %q; want %d and the usage on stderr", code, out, stderr, exitUsage)
	}
	// The help asked for is no error.
	if code, out, _ := cli(t, "--help"); code != exitOK || !strings.Contains(out, "Usage:") {
		t.Errorf("--help: exit %d (%s); want %d and the help on stdout", code, out, exitOK)
	}
}
