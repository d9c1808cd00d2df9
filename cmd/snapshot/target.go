package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/informerdb/informerdb/store"
	"github.com/informerdb/informerdb/store/badger"
	"github.com/informerdb/informerdb/store/bolt"
	"github.com/informerdb/informerdb/store/memory"
	"github.com/informerdb/informerdb/store/snapshot"
)

// A command's arguments name what it reads and writes: a store URL
// (scheme://path), or a path, which is recognised by its content:
//
//	a portable snapshot file (save wrote it)  the file
//	a bolt file                               bolt:///abs/path
//	a badger directory                        badger:///abs/path
//	a memory or memdb snapshot file           memory:///abs/path (the two backends share the format)
//
// Anything else is refused (usage, exit 2) with what to type instead. A new
// database has no content to recognise: it is named by a URL.

// storeURLs lists the store URLs, for errors.
const storeURLs = "bolt:///abs/file.db, badger:///abs/dir, memory:///abs/file.snap, memdb:///abs/file.snap"

// urlHelp says what an argument may be.
const urlHelp = "give a snapshot file, a database's path (a bolt file or a badger directory), or a store URL: " + storeURLs

// openSource resolves the argument naming what a command reads (the
// database save copies, the file restore reads, the target of status,
// verify, ls, get and by-index): a store URL, a snapshot file or a
// handler's address. Every command resolves its source here, so that a new
// kind of source is one change in one place. op names the command in
// errors.
func openSource(op, arg string) (target, error) {
	if snapshot.IsHTTP(arg) {
		// A running process's handler (remote.go): save and status ask it
		// directly, the commands that read objects through localCopy.
		if op == "restore" || op == "verify" {
			return target{}, usageError{fmt.Errorf("%s: %s is a running process's handler; save, status, ls, get and by-index read it: save it to a file first (save verifies what it fetches)", op, arg)}
		}
		return target{ref: arg}, nil
	}
	return resolve(op, arg)
}

// databaseURL resolves the argument naming the database a command writes
// (restore, rekey, drop) into a store URL. A snapshot file is refused, and
// so is a path that does not exist: a new database is named by its URL.
func databaseURL(op, arg string) (string, error) {
	if !snapshot.IsURL(arg) && arg != "" {
		if _, err := os.Stat(arg); errors.Is(err, fs.ErrNotExist) {
			return "", usageError{fmt.Errorf("%s: %s does not exist; to make a new database, name its backend with a store URL: bolt://%s, badger://%s, memory://%s or memdb://%s",
				op, arg, absOr(arg), absOr(arg), absOr(arg), absOr(arg))}
		}
	}
	t, err := resolve(op, arg)
	if err != nil {
		return "", err
	}
	if t.file {
		return "", usageError{fmt.Errorf("%s: %s is a snapshot file, not a database; give a database's path (a bolt file or a badger directory) or a store URL: %s", op, arg, storeURLs)}
	}
	return t.ref, nil
}

// target is a resolved argument.
type target struct {
	ref  string // a store URL, a handler's address, or the path of a portable snapshot file
	file bool   // ref is a portable snapshot file
}

// resolve turns a command's argument into a store URL (a relative path made
// absolute) or a portable snapshot file, recognising a path by its content.
func resolve(op, arg string) (target, error) {
	if arg == "" {
		return target{}, usageError{fmt.Errorf("%s: an empty argument; %s", op, urlHelp)}
	}
	if snapshot.IsURL(arg) {
		ref := arg
		for _, scheme := range []string{"bolt", "badger", "memory", "memdb"} {
			// Users may type bolt://cache.db: the path is made absolute.
			if p, ok := strings.CutPrefix(arg, scheme+"://"); ok && p != "" && p[0] != '/' {
				abs, err := filepath.Abs(p)
				if err != nil {
					return target{}, usageError{err}
				}
				ref = scheme + "://" + abs
				break
			}
		}
		u, err := url.Parse(ref)
		if err != nil {
			return target{}, usageError{fmt.Errorf("%s: %w; %s", op, err, urlHelp)}
		}
		if !slices.Contains(store.Schemes(), u.Scheme) {
			// file:// and other schemes no backend serves.
			return target{}, usageError{fmt.Errorf("%s: %s: unknown scheme %q; %s", op, arg, u.Scheme, urlHelp)}
		}
		return target{ref: ref}, nil
	}
	kind, err := recognise(arg)
	if err != nil {
		return target{}, fmt.Errorf("%s: %w", op, err)
	}
	if kind == "" {
		return target{}, usageError{fmt.Errorf("%s: %s is not a snapshot file, a bolt file or a badger directory; %s", op, arg, urlHelp)}
	}
	if kind == "file" {
		return target{ref: arg, file: true}, nil
	}
	abs, err := filepath.Abs(arg)
	if err != nil {
		return target{}, usageError{fmt.Errorf("%s: %s: %w", op, arg, err)}
	}
	return target{ref: kind + "://" + abs}, nil
}

// absOr returns path made absolute, or as it is if that fails.
func absOr(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// File contents recognise recognises.
const (
	portableMagic = "IDBPORT\n" // store/snapshot's format
	memoryMagic   = "IDBSNAP\n" // the memory and memdb backends' snapshot files
	// bbolt's, after the first meta page's 16-byte header, in the machine's
	// byte order.
	boltMagic      = 0xED0CDAED
	boltMagicAt    = 16
	boltMetaFlagAt = 8
	boltMetaFlag   = 0x04
)

// badgerFiles are names only a badger directory holds.
var badgerFiles = []string{"MANIFEST", "KEYREGISTRY", "INFORMERDB-STORES"}

// recognise tells what path holds by its content: "file" for a portable
// snapshot file, a backend's scheme for a database, or "" for none.
func recognise(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		for _, name := range badgerFiles {
			if _, err := os.Lstat(filepath.Join(path, name)); err == nil {
				return badger.Scheme, nil
			}
		}
		return "", nil
	}
	if !fi.Mode().IsRegular() {
		return "", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, boltMagicAt+4)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", err
	}
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte(portableMagic)):
		return "file", nil
	case bytes.HasPrefix(head, []byte(memoryMagic)):
		return memory.Scheme, nil
	case len(head) == boltMagicAt+4:
		flags := head[boltMetaFlagAt : boltMetaFlagAt+2]
		magic := head[boltMagicAt:]
		if (binary.LittleEndian.Uint16(flags) == boltMetaFlag && binary.LittleEndian.Uint32(magic) == boltMagic) ||
			(binary.BigEndian.Uint16(flags) == boltMetaFlag && binary.BigEndian.Uint32(magic) == boltMagic) {
			return bolt.Scheme, nil
		}
	}
	return "", nil
}
