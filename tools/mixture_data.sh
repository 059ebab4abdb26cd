# shellcheck shell=bash
# Sourced by tools/mixture_example.sh and tools/diloco_quality.sh: byte-level data from text that ships with
# Debian, one uint16 token per byte. mixture_data DIR: the mixture example's (licence texts as prose, C headers
# as code), DIR/prose.u16, prose_val.u16, code.u16 and code_val.u16; quality_data (below): the quality run's.
mixture_bytes() { # out files...: every byte of the files as one uint16 token
    cat "${@:2}" | od -An -v -tu1 -w1 | awk 'BEGIN { ORS = "" } { printf "%c%c", $1, 0 }' >"$1"
}
mixture_data() {
    mixture_bytes "$1/prose.u16" /usr/share/common-licenses/GPL-3 /usr/share/common-licenses/Apache-2.0
    mixture_bytes "$1/prose_val.u16" /usr/share/common-licenses/LGPL-2.1
    mixture_bytes "$1/code.u16" /usr/include/stdio.h /usr/include/stdlib.h /usr/include/string.h
    mixture_bytes "$1/code_val.u16" /usr/include/unistd.h
}

# quality_data DIR PRE CONT VAL SHARDS: the quality run's corpus (tools/diloco_quality.sh), from text that ships
# with Debian: prose (/usr/share/common-licenses, every /usr/share/doc/*/copyright, the gzipped files under
# /usr/share/doc and the English man pages but gcloud's thousands of generated ones, read through zcat)
# and code (/usr/include/**/*.h, /usr/lib/python3*/**/*.py). Per kind the files go in a fixed pseudo-random
# order (a hash of the path, ties by path): the first fill the validation text (VAL bytes per kind, the
# first 1 KB of each file, so that many files are scored, dealt to the SHARDS files with the fewest bytes),
# the next the continued phase's training text, the next the first phase's (PRE and CONT bytes of prose,
# a third of that of code: the runs mix 3:1; the first 32 KB of each file), each split ending at a whole
# file. Licence notices repeat across files word for word, so a line of 32 bytes or more is kept only where
# it first occurs (validation first), which also keeps the validation text out of the training text.
# Writes DIR/KIND_pre.u16, KIND_cont.u16, KIND_val0.u16.. (one uint16 token per byte, as mixture_bytes:
# Latin-1 to UTF-16LE maps byte b to the unit b) and prints each split's files and bytes.
quality_files() { # kind: the candidate files, sorted
    case $1 in
        prose) find /usr/share/common-licenses /usr/share/doc /usr/share/man/man[1-8] -type f \
            \( -path '/usr/share/common-licenses/*' -o -name copyright -o -name '*.gz' \) ! -name 'gcloud*' ;;
        code) find /usr/include -type f -name '*.h'
            find /usr/lib/python3* -type f -name '*.py' ;;
    esac | LC_ALL=C sort -u
}
quality_split() { # dir kind pre cont val shards
    quality_files "$2" | LC_ALL=C awk '
        BEGIN { for (i = 1; i < 256; i++) ord[sprintf("%c", i)] = i }
        { h = 0; for (i = 1; i <= length($0); i++) h = (h * 131 + ord[substr($0, i, 1)]) % 2147483647
          print h "\t" $0 }' | LC_ALL=C sort -t "$(printf '\t')" -k1,1n -k2 | cut -f2- |
        LC_ALL=C awk -v dir="$1" -v kind="$2" -v pre="$3" -v cont="$4" -v val="$5" -v shards="$6" '
        function out_name(  k) { # the validation shard with the fewest bytes so far (s), else the part
            if (part != "val") return dir "/" kind "_" part ".txt"
            s = 0; for (k = 1; k < shards; k++) if (shard[k] < shard[s]) s = k
            return dir "/" kind "_val" s ".txt"
        }
        BEGIN { part = "val"; budget = val; cap = 1024 }
        part == "done" { next } # reads the list to its end, so that no stage before dies of a closed pipe
        { q = $0; gsub(/\047/, "\047\\\047\047", q); cmd = "zcat -f -- \047" q "\047"; out = out_name(); n = 0
          while (n < cap && (cmd | getline line) > 0) {
              if (length(line) >= 32 && seen[line]++) continue
              print line > out; n += length(line) + 1
          }
          close(cmd); files++; bytes += n; if (part == "val") shard[s] += n
          if (bytes >= budget) {
              printf "%s %s: %d files, %d bytes\n", kind, part, files, bytes
              if (part == "val") { part = "cont"; budget = cont; cap = 32768 }
              else if (part == "cont") { part = "pre"; budget = pre } else part = "done"
              files = 0; bytes = 0
          } }'
    local f
    for f in "$1/$2"_*.txt; do iconv -f latin1 -t UTF-16LE "$f" >"${f%.txt}.u16" && rm "$f"; done
}
quality_data() {
    quality_split "$1" prose "$2" "$3" "$4" "$5"
    quality_split "$1" code $(($2 / 3)) $(($3 / 3)) "$4" "$5"
}
