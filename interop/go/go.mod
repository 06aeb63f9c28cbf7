// scripts/saratoga-interop.sh builds this in a temporary copy, adding a
// `require` and a `replace` for each package of a local checkout of
// github.com/charlesetsmith/saratoga (SARATOGA_GO_SRC): that source is not
// in this repository (no licence file) and the Go module proxy refuses it.
module satcc.invalid/interop/sarpeer

go 1.21
