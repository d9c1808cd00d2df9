package crashtest

import (
	_ "github.com/informerdb/informerdb/store/badger"
)

// badger syncs every commit by default: every acknowledged batch survives.
func init() {
	backends = append(backends,
		backend{
			name:    "badger",
			url:     func(dir string) string { return "badger://" + dir },
			durable: true,
			// Badger asserts (log.Fatal) when it cannot create a
			// memtable file: the process ends, as under kill -9.
			// Its min_free reserve does not see a file size limit;
			// on a full file system it fails the commit instead
			// (TestFullFileSystem).
			diskFullExits: true,
		},
		backend{
			name:          "badger-bounded",
			url:           func(dir string) string { return "badger://" + dir + "?cache=4" },
			durable:       true,
			diskFullExits: true,
		},
	)
}
