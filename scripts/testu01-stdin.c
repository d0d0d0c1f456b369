/*
 * Runs one of TestU01's batteries on 32-bit little-endian words read from stdin (TestU01 has no
 * reader of its own): scripts/random-battery.sh pipes bench/random-kernel-stream.ts into it.
 *
 *   cc -O2 -o testu01-stdin scripts/testu01-stdin.c -I$TESTU01/include -L$TESTU01/lib -ltestu01 -lprobdist -lmylib -lm
 *   npx tsx bench/random-kernel-stream.ts | ./testu01-stdin SmallCrush "ufunc Math.random()"
 *
 * The battery is SmallCrush, Crush or BigCrush. Each word is one call of TestU01's GetBits (a
 * uniform in [0, 1) is that word times 2^-32, as TestU01 does for every 32-bit generator). It
 * stops with exit status 2 if stdin ends before the battery does, rather than test a short stream.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bbattery.h"
#include "unif01.h"

#define BUFFER_WORDS (1u << 16)

static uint32_t buffer[BUFFER_WORDS];
static size_t filled = 0, next = 0;
static unsigned long long words_read = 0;

static unsigned int next_word(void) {
  if (next == filled) {
    filled = fread(buffer, sizeof buffer[0], BUFFER_WORDS, stdin);
    next = 0;
    if (filled == 0) {
      fprintf(stderr, "testu01-stdin: stdin ended after %llu words, before the battery did\n", words_read);
      exit(2);
    }
  }
  words_read++;
  return buffer[next++];
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s SmallCrush|Crush|BigCrush [name] < words\n", argv[0]);
    return 1;
  }
  char *name = argc > 2 ? argv[2] : "stdin";
  unif01_Gen *gen = unif01_CreateExternGenBits(name, next_word);
  if (strcmp(argv[1], "SmallCrush") == 0) bbattery_SmallCrush(gen);
  else if (strcmp(argv[1], "Crush") == 0) bbattery_Crush(gen);
  else if (strcmp(argv[1], "BigCrush") == 0) bbattery_BigCrush(gen);
  else {
    fprintf(stderr, "%s: unknown battery %s (SmallCrush, Crush or BigCrush)\n", argv[0], argv[1]);
    return 1;
  }
  printf("testu01-stdin: %llu words read\n", words_read);
  unif01_DeleteExternGenBits(gen);
  return 0;
}
