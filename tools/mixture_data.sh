# shellcheck shell=bash
# Sourced by tools/mixture_example.sh and tools/diloco_quality.sh: the mixture example's data, the byte-level
# sources that ship with Debian (licence texts as prose, C headers as code), one uint16 token per byte.
# mixture_data DIR writes DIR/prose.u16, prose_val.u16, code.u16 and code_val.u16.
mixture_bytes() { # out files...: every byte of the files as one uint16 token
    cat "${@:2}" | od -An -v -tu1 -w1 | awk 'BEGIN { ORS = "" } { printf "%c%c", $1, 0 }' >"$1"
}
mixture_data() {
    mixture_bytes "$1/prose.u16" /usr/share/common-licenses/GPL-3 /usr/share/common-licenses/Apache-2.0
    mixture_bytes "$1/prose_val.u16" /usr/share/common-licenses/LGPL-2.1
    mixture_bytes "$1/code.u16" /usr/include/stdio.h /usr/include/stdlib.h /usr/include/string.h
    mixture_bytes "$1/code_val.u16" /usr/include/unistd.h
}
