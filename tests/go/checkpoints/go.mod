module pokdeng.example/tests/go/checkpoints

go 1.19

require golang.org/x/mod v0.7.0

// Debian's golang-golang-x-mod-dev installs golang.org/x/mod's sources here: the build needs no module
// proxy and no network (GOPROXY=off, GOFLAGS=-mod=readonly; tests/test_go_checkpoints.py).
replace golang.org/x/mod => /usr/share/gocode/src/golang.org/x/mod
