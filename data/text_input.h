/* The input files of build/tokenize as documents. A plain text file is one document; a JSONL file holds one
   document per line (lines of only white space hold none). A file compressed with gzip (.gz, also several
   members one after another) or Zstandard (.zst, any number of frames) is read the same way once
   decompressed; it is recognised by its first bytes, whatever its name. A regular plain file is mapped; a
   compressed JSONL file streams through a buffer of about TEXT_INPUT_CHUNK bytes, so that no more than a
   batch of its documents is ever held; a compressed text file is one document and is held whole while it is
   tokenized. A truncated or corrupt stream stops the program naming the file and the byte offset in it. */
#ifndef REPOC_TEXT_INPUT_H
#define REPOC_TEXT_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TEXT_INPUT_CHUNK ((size_t)8 << 20)

typedef struct {
    const uint8_t* text; /* the document, or its JSONL line */
    size_t len;
    size_t file, line; /* for messages: the file's index, the 1-based line (JSONL) */
} TextDoc;

/* How an input file is compressed: none, gzip or zstd */
typedef enum { TEXT_PLAIN, TEXT_GZIP, TEXT_ZSTD } TextCompression;

typedef struct TextInput TextInput;

/* the path to open for an input named path: "-" is standard input */
const char* text_input_os_path(const char* path);
/* path ("-": standard input) opened as file number `file` of the run; jsonl: one document per line */
TextInput* text_input_open(const char* path, size_t file, bool jsonl);
/* The next documents into docs[0..max_docs), as many as fit about max_bytes (at least one): their text
   stays valid until the next call. Returns how many; 0 at the end of the file. */
size_t text_input_next(TextInput* in, TextDoc* docs, size_t max_docs, size_t max_bytes);
/* the file's size on disk (0 for a pipe) and how much of it has been read so far */
size_t text_input_size(const TextInput* in);
size_t text_input_read(const TextInput* in);
TextCompression text_input_compression(const TextInput* in);
void text_input_close(TextInput* in);

/* What path holds, by its first bytes: TEXT_PLAIN also for a pipe or device, which is not read (its bytes
   would be gone); *regular says whether it is a regular file, which can be read twice. */
TextCompression text_input_sniff(const char* path, bool* regular);
/* the documents of path, counted by reading it once */
size_t text_input_count(const char* path, size_t file, bool jsonl);

#endif
