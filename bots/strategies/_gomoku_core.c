/* The `gomoku` strategy's search in C: the same decisions as bots/strategies/gomoku.py,
 * node for node (tests/test_bots_gomoku_core.py plays both on the same positions and
 * budgets and compares move, reason, nodes and depth), 25 to 30 times as many nodes a
 * millisecond (bench/strength.py prints both). gomoku.py is the reference and its
 * docstrings say what each step does; the functions here carry the same names without
 * the leading underscore.
 *
 * What differs is only how, not what:
 * - the board (`Lines`) keeps each cell's gain as two numbers, X's and both sides'
 *   together, not packed in one Python int; moves sort by (both, X's) as by the packed key;
 * - the window sets (fours, threes) are index sets; cell sets are marks on a stamp array;
 * - running out of nodes or time (`_OutOfTime`) is a longjmp to the step that catches it,
 *   which then undoes the stones the search had on the board (every push and place is
 *   recorded), as the Python `finally` blocks do;
 * - the tables kept from move to move (alpha-beta, refuted VCFs and VCTs) are open
 *   addressing maps keyed by the Zobrist hash, which the Python side computes.
 * Geometry (windows, cells around a cell), Zobrist keys and the per-code window steps
 * come from the Python `Lines`, so there is one definition of each.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXC 256
#define WIN ((int64_t)1 << 30)
#define MATE (WIN - 1000)
#define ROOT_WIDTH 14
#define VCF_DEPTH 12
#define VCT_DEPTH 3
#define VCF_IN_VCT (VCF_DEPTH / 2)
#define VCT_CHECK_DEPTH 4
#define VCT_CHECK_MAX 8
#define VCT_CHECKS 20
#define PROOF_CELLS 2
#define SEARCH_SHARE 0.7
#define DEFENCE_SHARE 0.4
#define FEW 3
#define PROBE_DEPTH 6
#define GUARDS 6
#define EXACT 0
#define LOWER 1
#define UPPER 2
static const int WIDTHS[5] = {10, 8, 7, 6, 5};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* --- maps keyed by a hash (< 2**63): open addressing, linear probing --------------- */

#define NOKEY UINT64_MAX

typedef struct {
    uint64_t key;
    int64_t score;
    int32_t depth;
    int16_t move;
    int8_t kind;
} Entry;

typedef struct {
    Entry *slots;
    size_t cap, len;
} Map;

static size_t slot_of(uint64_t key, size_t cap) {
    uint64_t h = key * 0x9E3779B97F4A7C15ULL;
    return (size_t)(h >> 20) & (cap - 1);
}

static void map_free(Map *m) {
    free(m->slots);
    m->slots = NULL;
    m->cap = m->len = 0;
}

static Entry *map_find(const Map *m, uint64_t key) {
    if (!m->cap) return NULL;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].key == key) return &m->slots[i];
        if (m->slots[i].key == NOKEY) return NULL;
    }
}

static int map_grow(Map *m) {
    size_t cap = m->cap ? m->cap * 2 : 1024;
    Entry *slots = malloc(cap * sizeof(Entry));
    if (!slots) return -1;
    for (size_t i = 0; i < cap; i++) slots[i].key = NOKEY;
    for (size_t i = 0; i < m->cap; i++) {
        if (m->slots[i].key == NOKEY) continue;
        size_t j = slot_of(m->slots[i].key, cap);
        while (slots[j].key != NOKEY) j = (j + 1) & (cap - 1);
        slots[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

/* The entry for ``key``, made if new (its key set, the rest to fill); NULL out of memory. */
static Entry *map_put(Map *m, uint64_t key) {
    if ((m->len + 1) * 2 > m->cap && map_grow(m) < 0) return NULL;
    size_t i = slot_of(key, m->cap);
    while (m->slots[i].key != key && m->slots[i].key != NOKEY) i = (i + 1) & (m->cap - 1);
    if (m->slots[i].key == NOKEY) {
        m->slots[i].key = key;
        m->len++;
    }
    return &m->slots[i];
}

/* --- the board -------------------------------------------------------------------------- */

typedef struct {
    int valid;
    int64_t dx, dsum, sx, so;
    int nev;
    int8_t ev[4][3]; /* (who, kind 3 or 4, +1 / -1) */
} Step;

/* A set of window indices: add, discard and iterate in O(1) a step. */
typedef struct {
    int *pos; /* -1 when absent */
    int *items;
    int len;
} WinSet;

static void ws_add(WinSet *s, int w) {
    if (s->pos[w] >= 0) return;
    s->pos[w] = s->len;
    s->items[s->len++] = w;
}

static void ws_discard(WinSet *s, int w) {
    int p = s->pos[w];
    if (p < 0) return;
    int last = s->items[--s->len];
    s->items[p] = last;
    s->pos[last] = p;
    s->pos[w] = -1;
}

enum { PUSHED, PLACED };

typedef struct Engine Engine;

/* --- the engine (a Python object) -------------------------------------------------------- */

struct Engine {
    PyObject_HEAD
    int k, n, rows, cols, nwin, size;
    int16_t *wcells;        /* nwin * k */
    int *thr_start, *thr;   /* windows through each cell */
    int *around_start, *around;
    uint64_t *zob;          /* 2 * n */
    Step *steps;            /* 2 * size * size */
    int64_t *gx0, *gs0;     /* gains on the empty board */
    /* the position */
    int *code;
    int8_t stone[MAXC];
    int near[MAXC];
    int64_t gx[MAXC], gs[MAXC];
    int64_t score[2];
    WinSet fours[2], threes[2];
    int stones;
    uint64_t hash;
    int undo_cell[4096];
    int8_t undo_kind[4096];
    int undo_len;
    /* cell sets: a cell is in the set when its stamp is the set's */
    uint32_t stamp[MAXC];
    uint32_t gen;
    /* the search */
    int64_t nodes, scored, limit, budget, vct_until_nodes;
    double deadline, vct_until_time, think_s;
    int reached;
    int64_t value;
    int killers[VCT_CHECK_MAX + 2];
    int proof[MAXC];
    jmp_buf out;
    int oom, busy;
    /* the root's lists (not on the stack: they outlive a step) */
    int moves[MAXC], order[MAXC + 1], safe[MAXC], rootm[MAXC + 1], checks[MAXC], checked[MAXC];
    int nmoves;
    Map table, refuted_vcf[2], refuted_vct[2];
};

#define CELLS(e, w) (&(e)->wcells[(w) * (e)->k])

static uint32_t fresh_stamp(Engine *e) {
    if (++e->gen == 0) {
        memset(e->stamp, 0, sizeof e->stamp);
        e->gen = 1;
    }
    return e->gen;
}

static void record(Engine *e, int cell, int kind) {
    e->undo_cell[e->undo_len] = cell;
    e->undo_kind[e->undo_len++] = (int8_t)kind;
}

static void apply_events(Engine *e, const Step *st, int w, int sign) {
    for (int i = 0; i < st->nev; i++) {
        int who = st->ev[i][0], kind = st->ev[i][1], add = st->ev[i][2] * sign;
        WinSet *s = kind == 4 ? &e->fours[who] : &e->threes[who];
        if (add > 0) ws_add(s, w);
        else ws_discard(s, w);
    }
}

/* ``side``'s stone on ``cell`` (``sign`` +1) or off it (-1): the window codes and threat
 * sets always; with ``full`` (alpha-beta's `place`/`take`) the scores, gains, ``near`` and
 * the stone count too, which the threat searches' `push`/`pop` leave stale. Inlined with
 * constant ``sign`` and ``full``, each of the four compiles to its own loop. */
static inline void move_stone(Engine *e, int cell, int side, int sign, int full) {
    e->hash ^= e->zob[side * e->n + cell];
    int inc = side == 0 ? e->size : 1;
    const Step *table = &e->steps[side * e->size * e->size];
    for (int i = e->thr_start[cell]; i < e->thr_start[cell + 1]; i++) {
        int w = e->thr[i], before = sign > 0 ? e->code[w] : e->code[w] - inc;
        e->code[w] = sign > 0 ? before + inc : before;
        const Step *st = &table[before];
        if (st->nev) apply_events(e, st, w, sign); /* events only where the step is valid */
        if (!full || !st->valid) continue;
        e->score[0] += sign * st->sx;
        e->score[1] += sign * st->so;
        const int16_t *cells = CELLS(e, w);
        for (int j = 0; j < e->k; j++) {
            e->gx[cells[j]] += sign * st->dx;
            e->gs[cells[j]] += sign * st->dsum;
        }
    }
    if (!full) return;
    e->stones += sign;
    for (int i = e->around_start[cell]; i < e->around_start[cell + 1]; i++) e->near[e->around[i]] += sign;
}

static void place(Engine *e, int cell, int side) {
    e->stone[cell] = (int8_t)side;
    move_stone(e, cell, side, 1, 1);
    record(e, cell, PLACED);
}

static void take(Engine *e, int cell) {
    int side = e->stone[cell];
    e->undo_len--;
    e->stone[cell] = -1;
    move_stone(e, cell, side, -1, 1);
}

static void push(Engine *e, int cell, int side) {
    e->stone[cell] = (int8_t)side;
    move_stone(e, cell, side, 1, 0);
    record(e, cell, PUSHED);
}

static void pop(Engine *e, int cell) {
    int side = e->stone[cell];
    e->undo_len--;
    e->stone[cell] = -1;
    move_stone(e, cell, side, -1, 0);
}

/* Undo what the board holds beyond ``mark`` (what the Python `finally` blocks do). */
static void unwind(Engine *e, int mark) {
    while (e->undo_len > mark) {
        int i = e->undo_len - 1;
        if (e->undo_kind[i] == PUSHED) pop(e, e->undo_cell[i]);
        else take(e, e->undo_cell[i]);
    }
}

static int64_t gain(const Engine *e, int side, int cell) {
    return side ? e->gs[cell] - e->gx[cell] : e->gx[cell];
}

/* The empty cells of the windows in ``set``, each once, into ``out``; their number. */
static int empty_cells_of(Engine *e, const WinSet *set, int *out) {
    uint32_t g = fresh_stamp(e);
    int n = 0;
    for (int i = 0; i < set->len; i++) {
        const int16_t *cells = CELLS(e, set->items[i]);
        for (int j = 0; j < e->k; j++) {
            int c = cells[j];
            if (e->stone[c] < 0 && e->stamp[c] != g) {
                e->stamp[c] = g;
                out[n++] = c;
            }
        }
    }
    return n;
}

static int wins(Engine *e, int side, int *out) { return empty_cells_of(e, &e->fours[side], out); }
static int four_moves(Engine *e, int side, int *out) { return empty_cells_of(e, &e->threes[side], out); }

static int min_of(const int *a, int n) {
    int m = a[0];
    for (int i = 1; i < n; i++)
        if (a[i] < m) m = a[i];
    return m;
}

static void sort_cells(int *a, int n) {
    for (int i = 1; i < n; i++) {
        int v = a[i], j = i - 1;
        while (j >= 0 && a[j] > v) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = v;
    }
}

static int candidates(const Engine *e, int *out) {
    if (!e->stones) {
        out[0] = (e->rows / 2) * e->cols + e->cols / 2;
        return 1;
    }
    int n = 0;
    for (int c = 0; c < e->n; c++)
        if (e->near[c] && e->stone[c] < 0) out[n++] = c;
    return n;
}

/* `_ordered`: the first ``width`` of ``a`` by both sides' gains, then X's (the packed
 * key), best first, into ``out`` (their number returned); a cell goes in after every
 * kept one at least as good, so ties keep their order (a stable sort when ``width`` is
 * ``n``). */
static int ordered_top(const Engine *e, const int *a, int n, int width, int *out) {
    int m = 0;
    for (int i = 0; i < n; i++) {
        int v = a[i];
        int64_t s = e->gs[v], x = e->gx[v];
        if (m == width) {
            int u = out[m - 1];
            if (!(e->gs[u] < s || (e->gs[u] == s && e->gx[u] < x))) continue;
            m--;
        }
        int j = m - 1;
        while (j >= 0 && (e->gs[out[j]] < s || (e->gs[out[j]] == s && e->gx[out[j]] < x))) {
            out[j + 1] = out[j];
            j--;
        }
        out[j + 1] = v;
        m++;
    }
    return m;
}

/* --- running out ------------------------------------------------------------------------- */

static void tick(Engine *e) {
    e->nodes++;
    if (e->nodes >= e->limit || ((e->nodes & 63) == 0 && now() > e->deadline)) longjmp(e->out, 1);
}

static int vct_spent(const Engine *e) {
    if (e->budget) return e->nodes >= e->vct_until_nodes;
    return now() > e->vct_until_time;
}

static void no_memory(Engine *e) {
    e->oom = 1;
    longjmp(e->out, 1);
}

static int64_t lookup(const Map *m, uint64_t key) {
    Entry *x = map_find(m, key);
    return x ? x->depth : -1;
}

static void remember(Engine *e, Map *m, uint64_t key, int depth) {
    Entry *x = map_put(m, key);
    if (!x) no_memory(e);
    x->depth = depth;
}

/* A catch point: ``HOLD(e, saved, mark);`` keeps the outer one in ``saved`` and the
 * board's undo mark, then ``if (setjmp(e->out) == 0)`` is true on the way in and false
 * when the search under it ran out (the caller then undoes the board to ``mark``);
 * ``RELEASE`` restores the outer catch point. (setjmp stands alone in its condition,
 * where the C standard allows it.) */
#define HOLD(e, saved, mark) (memcpy((saved), (e)->out, sizeof(jmp_buf)), (mark) = (e)->undo_len)
#define RELEASE(e, saved) memcpy((e)->out, (saved), sizeof(jmp_buf))

/* --- threats ------------------------------------------------------------------------------ */

/* The two empty cells of window ``w``, one stone short of a four. */
static void two_empty(const Engine *e, int w, int ab[2]) {
    const int16_t *cells = CELLS(e, w);
    for (int j = 0, m = 0; j < e->k && m < 2; j++)
        if (e->stone[cells[j]] < 0) ab[m++] = cells[j];
}

/* `_double_cells`: the empty cells where ``side`` makes two winning cells at once (into
 * ``out``, their number returned). */
static int double_cells(Engine *e, int side, int *out) {
    int16_t partner[MAXC];
    uint32_t seen = fresh_stamp(e);
    uint32_t dbl = fresh_stamp(e);
    int n = 0;
    const WinSet *t = &e->threes[side];
    for (int i = 0; i < t->len; i++) {
        int ab[2];
        two_empty(e, t->items[i], ab);
        for (int s = 0; s < 2; s++) {
            int c = ab[s], rest = ab[1 - s];
            if (e->stamp[c] != seen && e->stamp[c] != dbl) {
                e->stamp[c] = seen;
                partner[c] = (int16_t)rest;
            } else if (e->stamp[c] == seen && partner[c] != rest) {
                e->stamp[c] = dbl;
                out[n++] = c;
            }
        }
    }
    return n;
}

static int double_four(Engine *e, int side) {
    int d[MAXC];
    int n = double_cells(e, side, d);
    return n ? min_of(d, n) : -1;
}

/* `_double_guards`: the cells that stop every double of ``side``'s into ``guards`` (their
 * number returned), the doubles into ``doubles`` (``*nd``); in_doubles marks them. */
static int double_guards(Engine *e, int side, int *guards, int *doubles, int *nd, uint8_t *in_doubles) {
    *nd = double_cells(e, side, doubles);
    memset(in_doubles, 0, MAXC);
    for (int i = 0; i < *nd; i++) in_doubles[doubles[i]] = 1;
    if (!*nd) return 0;
    uint32_t g = fresh_stamp(e);
    int n = 0;
    const WinSet *t = &e->threes[side];
    for (int i = 0; i < t->len; i++) {
        int ab[2];
        two_empty(e, t->items[i], ab);
        if (!in_doubles[ab[0]] && !in_doubles[ab[1]]) continue;
        for (int s = 0; s < 2; s++)
            if (e->stamp[ab[s]] != g) {
                e->stamp[ab[s]] = g;
                guards[n++] = ab[s];
            }
    }
    return n;
}

static int vcf(Engine *e, int side, int depth) {
    int other = 1 - side, buf[MAXC];
    Map *failed = &e->refuted_vcf[side];
    if (e->fours[side].len) return min_of(buf, wins(e, side, buf));
    if (depth == 0 || e->fours[other].len || lookup(failed, e->hash) >= depth) return -1;
    int dbl = double_four(e, side);
    if (dbl >= 0) {
        tick(e);
        return dbl;
    }
    if (depth == 1) {
        remember(e, failed, e->hash, depth);
        return -1;
    }
    int moves[MAXC];
    int nm = four_moves(e, side, moves);
    sort_cells(moves, nm);
    for (int i = 0; i < nm; i++) {
        int c = moves[i];
        tick(e);
        push(e, c, side);
        int nw = wins(e, side, buf);
        if (nw >= 2) {
            pop(e, c);
            return c;
        }
        int block = buf[0];
        tick(e);
        push(e, block, other);
        int won = !e->fours[other].len && vcf(e, side, depth - 1) >= 0;
        pop(e, block);
        pop(e, c);
        if (won) return c;
    }
    remember(e, failed, e->hash, depth);
    return -1;
}

static int answered(Engine *e, int side, int depth, Map *failed);

static int vct(Engine *e, int side, int depth, Map *failed, int hint) {
    if (depth == 0 || vct_spent(e) || lookup(failed, e->hash) >= depth) return -1;
    int other = 1 - side;
    int found = vcf(e, side, VCF_IN_VCT);
    if (found >= 0 || depth == 1) {
        if (found >= 0) e->proof[found]++;
        return found;
    }
    if (e->fours[other].len) return -1;
    /* `_threes`, then the fours at 1000 and the hint at 2000 */
    int count[MAXC], cells[MAXC], nc = 0;
    memset(count, 0, sizeof(int) * (size_t)e->n);
    int want = side == 0 ? (e->k - 3) * e->size : e->k - 3;
    for (int w = 0; w < e->nwin; w++) {
        if (e->code[w] != want) continue;
        const int16_t *wc = CELLS(e, w);
        for (int j = 0; j < e->k; j++)
            if (e->stone[wc[j]] < 0 && count[wc[j]]++ == 0) cells[nc++] = wc[j];
    }
    int fm[MAXC];
    int nf = four_moves(e, side, fm);
    for (int i = 0; i < nf; i++) {
        if (!count[fm[i]]) cells[nc++] = fm[i];
        count[fm[i]] = 1000;
    }
    if (hint >= 0 && count[hint]) count[hint] = 2000;
    /* by (-count, cell) */
    for (int i = 1; i < nc; i++) {
        int v = cells[i], j = i - 1;
        while (j >= 0 && (count[cells[j]] < count[v] || (count[cells[j]] == count[v] && cells[j] > v))) {
            cells[j + 1] = cells[j];
            j--;
        }
        cells[j + 1] = v;
    }
    for (int i = 0; i < nc; i++) {
        int c = cells[i];
        tick(e);
        push(e, c, side);
        int won = answered(e, side, depth, failed);
        pop(e, c);
        if (won) {
            e->proof[c]++;
            return c;
        }
    }
    if (!vct_spent(e)) remember(e, failed, e->hash, depth);
    return -1;
}

static int refuted(Engine *e, int side, int defence, int depth, Map *failed) {
    int other = 1 - side, buf[MAXC], r;
    tick(e);
    push(e, defence, other);
    if (!e->fours[other].len) {
        r = vct(e, side, depth - 1, failed, -1) >= 0;
    } else {
        int nb = wins(e, other, buf);
        if (nb >= 2 || depth <= 1) {
            r = 0;
        } else {
            int block = buf[0];
            tick(e);
            push(e, block, side);
            r = answered(e, side, depth - 1, failed);
            pop(e, block);
        }
    }
    pop(e, defence);
    return r;
}

static int answered(Engine *e, int side, int depth, Map *failed) {
    if (e->fours[1 - side].len) return 0;
    int defences[2 * MAXC], nd;
    uint8_t in_doubles[MAXC];
    nd = wins(e, side, defences);
    if (nd >= 2) return 1;
    if (nd) {
        memset(in_doubles, 0, (size_t)e->n);
    } else {
        int doubles[MAXC], ndb;
        nd = double_guards(e, side, defences, doubles, &ndb, in_doubles);
        if (!nd) return 0;
        /* defences |= four_moves(other) */
        uint8_t in_def[MAXC];
        memset(in_def, 0, (size_t)e->n);
        for (int i = 0; i < nd; i++) in_def[defences[i]] = 1;
        int fm[MAXC];
        int nf = four_moves(e, 1 - side, fm);
        for (int i = 0; i < nf; i++)
            if (!in_def[fm[i]]) {
                in_def[fm[i]] = 1;
                defences[nd++] = fm[i];
            }
    }
    int killer = e->killers[depth];
    /* by (d != killer, d not in doubles, d) */
    for (int i = 1; i < nd; i++) {
        int v = defences[i], j = i - 1;
        int kv = v != killer, dv = !in_doubles[v];
        while (j >= 0) {
            int u = defences[j], ku = u != killer, du = !in_doubles[u];
            if (ku > kv || (ku == kv && (du > dv || (du == dv && u > v)))) {
                defences[j + 1] = u;
                j--;
            } else {
                break;
            }
        }
        defences[j + 1] = v;
    }
    for (int i = 0; i < nd; i++) {
        if (!refuted(e, side, defences[i], depth, failed)) {
            e->killers[depth] = defences[i];
            return 0;
        }
    }
    return 1;
}

static int vct_after(Engine *e, int side, int move, int depth, Map *failed, int hint) {
    int buf[MAXC], r;
    push(e, move, side);
    int nb = wins(e, side, buf);
    if (nb >= 2) {
        r = -1;
    } else if (!nb) {
        r = vct(e, 1 - side, depth, failed, hint);
    } else {
        int block = buf[0];
        push(e, block, 1 - side);
        r = vct(e, 1 - side, depth, failed, hint);
        pop(e, block);
    }
    pop(e, move);
    return r;
}

/* `_stops` */
static int stops(Engine *e, int side) {
    int other = 1 - side, buf[MAXC];
    if (!e->fours[side].len) return vcf(e, other, VCF_DEPTH) < 0;
    int nw = wins(e, side, buf);
    if (nw >= 2) return 1;
    int block = buf[0];
    push(e, block, other);
    int r = !e->fours[other].len && vcf(e, other, VCF_DEPTH) < 0;
    pop(e, block);
    return r;
}

/* `_defences`: -1 for None, else how many of ``moves`` were kept (written to ``keep``). */
static int defences(Engine *e, int side, const int *moves, int n, int *keep) {
    if (vcf(e, 1 - side, VCF_DEPTH) < 0) return -1;
    int nk = 0;
    for (int i = 0; i < n; i++) {
        push(e, moves[i], side);
        int ok = stops(e, side);
        pop(e, moves[i]);
        if (ok) keep[nk++] = moves[i];
    }
    return nk ? nk : -1;
}

/* --- alpha-beta -------------------------------------------------------------------------- */

static int64_t search(Engine *e, int side, int depth, int64_t alpha, int64_t beta, int ply);

static int64_t frontier(Engine *e, int side, int64_t alpha, int64_t beta, int ply) {
    int other = 1 - side;
    int fours[MAXC], nf = 0;
    uint8_t is_four[MAXC];
    memset(is_four, 0, (size_t)e->n);
    if (e->threes[side].len) {
        nf = four_moves(e, side, fours);
        for (int i = 0; i < nf; i++) is_four[fours[i]] = 1;
    }
    if (nf && vcf(e, side, PROBE_DEPTH) >= 0) return WIN - ply - 2;
    int64_t here = e->score[side] - e->score[other];
    int64_t best = -WIN - 1;
    int moves[MAXC];
    int nm = candidates(e, moves);
    if (!nm) return 0;
    if (e->threes[other].len && vcf(e, other, PROBE_DEPTH) >= 0) {
        int quiet[MAXC], nq = 0;
        for (int i = 0; i < nm; i++)
            if (!is_four[moves[i]]) quiet[nq++] = moves[i];
        for (int i = 1; i < nq; i++) { /* by gain, best first, stable */
            int v = quiet[i], j = i - 1;
            int64_t gv = gain(e, side, v);
            while (j >= 0 && gain(e, side, quiet[j]) < gv) {
                quiet[j + 1] = quiet[j];
                j--;
            }
            quiet[j + 1] = v;
        }
        best = -(WIN - ply - 3);
        for (int i = 0; i < nq && i < GUARDS; i++) {
            int m = quiet[i];
            tick(e);
            push(e, m, side);
            int stopped = vcf(e, other, PROBE_DEPTH) < 0;
            pop(e, m);
            if (stopped) {
                best = here + gain(e, side, m);
                break;
            }
        }
        nm = 0;
    }
    for (int i = 0; i < nm; i++) {
        int m = moves[i];
        if (is_four[m]) continue;
        e->nodes++;
        e->scored++;
        int64_t score = here + gain(e, side, m);
        if (score > best) {
            best = score;
            if (best >= beta) return best;
        }
    }
    sort_cells(fours, nf);
    for (int i = 0; i < nf; i++) {
        int m = fours[i];
        place(e, m, side);
        int64_t score = -search(e, other, 0, -beta, -(alpha > best ? alpha : best), ply + 1);
        take(e, m);
        if (score > best) {
            best = score;
            if (best >= beta) break;
        }
    }
    return best;
}

static int64_t search(Engine *e, int side, int depth, int64_t alpha, int64_t beta, int ply) {
    tick(e);
    int other = 1 - side;
    if (e->fours[side].len) return WIN - ply;
    uint64_t key = e->hash * 2 + (uint64_t)side;
    Entry *entry = map_find(&e->table, key);
    int first = -1;
    if (entry) {
        int64_t score = entry->score;
        int kind = entry->kind;
        first = entry->move;
        if (entry->depth >= depth) {
            if (score >= MATE) score -= ply;
            else if (score <= -MATE) score += ply;
            if (kind == EXACT || (kind == LOWER ? score >= beta : score <= alpha)) return score;
        }
    }
    int entered = depth;
    int moves[MAXC + 1], nm;
    if (e->fours[other].len) {
        nm = wins(e, other, moves);
        if (nm >= 2) return -(WIN - ply - 1);
    } else if (depth <= 0) {
        return e->score[side] - e->score[other];
    } else if (depth == 1) {
        return frontier(e, side, alpha, beta, ply);
    } else {
        int all[MAXC];
        nm = ordered_top(e, all, candidates(e, all), WIDTHS[(ply < 5 ? ply : 5) - 1], moves);
        if (first >= 0 && e->stone[first] < 0) {
            int at = -1;
            for (int i = 0; i < nm; i++)
                if (moves[i] == first) at = i;
            if (at < 0) at = nm++;
            for (int i = at; i > 0; i--) moves[i] = moves[i - 1];
            moves[0] = first;
        }
        depth -= 1;
    }
    if (!nm) return 0;
    int64_t best = -WIN - 1;
    int best_move = moves[0];
    for (int i = 0; i < nm; i++) {
        int m = moves[i];
        int64_t lower = alpha > best ? alpha : best, score;
        place(e, m, side);
        if (i == 0 || beta - lower == 1) {
            score = -search(e, other, depth, -beta, -lower, ply + 1);
        } else {
            score = -search(e, other, depth, -lower - 1, -lower, ply + 1);
            if (lower < score && score < beta) score = -search(e, other, depth, -beta, -score, ply + 1);
        }
        take(e, m);
        if (score > best) {
            best = score;
            best_move = m;
            if (best >= beta) break;
        }
    }
    int kind = best >= beta ? LOWER : best <= alpha ? UPPER : EXACT;
    int64_t stored = best >= MATE ? best + ply : best <= -MATE ? best - ply : best;
    Entry *x = map_put(&e->table, key);
    if (!x) no_memory(e);
    x->depth = entered;
    x->score = stored;
    x->kind = (int8_t)kind;
    x->move = (int16_t)best_move;
    return best;
}

/* `_root`: the best score and move (into ``*move``). */
static int64_t root(Engine *e, int side, const int *moves, int n, int depth, int *move) {
    int64_t alpha = -WIN - 1;
    *move = moves[0];
    for (int i = 0; i < n; i++) {
        int m = moves[i];
        int64_t score;
        place(e, m, side);
        if (i == 0) {
            score = -search(e, 1 - side, depth - 1, -WIN - 1, -alpha, 1);
        } else {
            score = -search(e, 1 - side, depth - 1, -alpha - 1, -alpha, 1);
            if (score > alpha) score = -search(e, 1 - side, depth - 1, -WIN - 1, -alpha, 1);
        }
        take(e, m);
        if (score > alpha) {
            alpha = score;
            *move = m;
        }
    }
    return alpha;
}

/* `_iterate` over ``moves`` (room for the spare ones after them). */
static int iterate(Engine *e, int side, int *moves, int n, const int *spare, int ns) {
    jmp_buf saved;
    int mark;
    volatile int best = moves[0], depth = 1, vn = n, vns = ns;
    while (depth <= 64) {
        int move;
        int64_t score;
        HOLD(e, saved, mark);
        if (setjmp(e->out) != 0) {
            unwind(e, mark);
            RELEASE(e, saved);
            break;
        }
        score = root(e, side, moves, vn, depth, &move);
        RELEASE(e, saved);
        best = move;
        e->reached = depth;
        e->value = score;
        int at = 0;
        while (moves[at] != move) at++;
        for (int i = at; i > 0; i--) moves[i] = moves[i - 1];
        moves[0] = move;
        if (score <= -MATE && vns) {
            for (int i = 0; i < vns; i++) moves[vn + i] = spare[i];
            vn += vns;
            vns = 0;
            continue;
        }
        if (score >= MATE || score <= -MATE) break;
        depth++;
    }
    return best;
}

/* --- the checks after alpha-beta ---------------------------------------------------------- */

static int tempo_threat(Engine *e, int side) {
    double t = now();
    e->vct_until_time = t + (e->deadline - t) / 10;
    e->vct_until_nodes = e->nodes + (e->limit - e->nodes) / 10;
    jmp_buf saved;
    int mark, found = -1;
    HOLD(e, saved, mark);
    if (setjmp(e->out) == 0) {
        found = vct(e, 1 - side, VCT_CHECK_DEPTH + 1, &e->refuted_vct[1 - side], -1);
    } else {
        unwind(e, mark);
        found = -1;
    }
    RELEASE(e, saved);
    return found;
}

/* rank: (deepest check passed) * 2 + (not shown to lose one deeper) */
#define RANK(depth, held) ((depth) * 2 + (held))

static int no_vct_after(Engine *e, int side, int *moves_in, int n_in, int hint_in) {
    e->vct_until_time = e->deadline;
    e->vct_until_nodes = e->limit;
    Map *failed = &e->refuted_vct[1 - side];
    int *moves = e->checked;
    int n = n_in;
    memcpy(moves, moves_in, sizeof(int) * (size_t)n);
    volatile int hint = hint_in;
    volatile int best = moves[0], best_rank = RANK(VCT_CHECK_DEPTH - 1, 0);
    volatile int target = VCT_CHECK_DEPTH, i = 0;
    volatile int rank;
    while (i < n && target <= VCT_CHECK_MAX) {
        int m = moves[i];
        rank = RANK(VCT_CHECK_DEPTH - 1, 1);
        jmp_buf saved;
        int mark;
        HOLD(e, saved, mark);
        if (setjmp(e->out) != 0) {
            unwind(e, mark);
            RELEASE(e, saved);
            return rank > best_rank ? m : best;
        }
        for (int depth = VCT_CHECK_DEPTH; depth <= target; depth++) {
            memset(e->proof, 0, sizeof e->proof);
            int found = vct_after(e, side, m, depth, failed, hint);
            if (found >= 0) {
                hint = found;
                rank = RANK(depth - 1, 0);
                break;
            }
            rank = RANK(depth, 1);
        }
        RELEASE(e, saved);
        if (m == best || rank > best_rank) {
            best = m;
            best_rank = rank;
        }
        if (rank & 1) {
            target++;
        } else {
            i++;
            /* the proof's cells by (c != hint, -count, c); the first two not yet checked */
            int proof[MAXC], np = 0;
            for (int c = 0; c < e->n; c++)
                if (e->proof[c]) proof[np++] = c;
            for (int a = 1; a < np; a++) {
                int v = proof[a], j = a - 1;
                while (j >= 0) {
                    int u = proof[j];
                    int hu = u != hint, hv = v != hint;
                    if (hu > hv || (hu == hv && (e->proof[u] < e->proof[v] ||
                                                 (e->proof[u] == e->proof[v] && u > v)))) {
                        proof[j + 1] = u;
                        j--;
                    } else {
                        break;
                    }
                }
                proof[j + 1] = v;
            }
            int fresh[PROOF_CELLS], nfr = 0;
            for (int a = 0; a < np && nfr < PROOF_CELLS; a++) {
                int checked = 0;
                for (int b = 0; b < i; b++)
                    if (moves[b] == proof[a]) checked = 1;
                if (!checked) fresh[nfr++] = proof[a];
            }
            int rest[MAXC], nr = 0;
            for (int b = i; b < n; b++) {
                int dup = 0;
                for (int f = 0; f < nfr; f++)
                    if (moves[b] == fresh[f]) dup = 1;
                if (!dup) rest[nr++] = moves[b];
            }
            n = i;
            for (int f = 0; f < nfr; f++) moves[n++] = fresh[f];
            for (int b = 0; b < nr; b++) moves[n++] = rest[b];
        }
    }
    return best;
}

/* --- the move ---------------------------------------------------------------------------- */

enum { R_WIN, R_BLOCK, R_SEARCH, R_VCF, R_VCT, R_DEFENCE };

/* `_decide` up to the shuffle: the move (``*reason`` set), or -1 with the candidates in
 * ``e->moves`` for the Python rng to shuffle (then `decide_rest`). Runs without the GIL. */
static int decide_first(Engine *e, int side, int *reason) {
    int other = 1 - side, buf[MAXC];
    if (e->fours[side].len) {
        *reason = R_WIN;
        return min_of(buf, wins(e, side, buf));
    }
    int nt = wins(e, other, buf);
    if (nt) {
        *reason = R_BLOCK;
        return min_of(buf, nt);
    }
    e->nmoves = candidates(e, e->moves);
    if (e->nmoves == 1) {
        *reason = R_SEARCH;
        return e->moves[0];
    }
    jmp_buf saved;
    int mark;
    volatile int found = -1, why = R_SEARCH;
    HOLD(e, saved, mark);
    if (setjmp(e->out) == 0) {
        found = vcf(e, side, VCF_DEPTH);
        if (found >= 0) {
            why = R_VCF;
        } else {
            int64_t share = e->budget / 4 > 1 ? e->budget / 4 : 1;
            e->vct_until_time = now() + e->think_s / 4;
            e->vct_until_nodes = e->nodes + share;
            found = vct(e, side, VCT_DEPTH, &e->refuted_vct[side], -1);
            if (found >= 0) why = R_VCT;
        }
    } else {
        unwind(e, mark);
        found = -1;
    }
    RELEASE(e, saved);
    *reason = why;
    return found;
}

/* `_decide` after the shuffle of ``e->moves``. Runs without the GIL. */
static int decide_rest(Engine *e, int side, int *reason) {
    int *order = e->order, *safe = e->safe, *rootm = e->rootm, *checks = e->checks;
    int no = ordered_top(e, e->moves, e->nmoves, e->nmoves, order);
    jmp_buf saved;
    int mark;
    volatile int nsafe = -1;
    HOLD(e, saved, mark);
    if (setjmp(e->out) == 0) {
        nsafe = defences(e, side, order, no < 2 * ROOT_WIDTH ? no : 2 * ROOT_WIDTH, safe);
    } else {
        unwind(e, mark);
        nsafe = -1;
    }
    RELEASE(e, saved);
    if (e->oom) return -1;
    *reason = R_SEARCH;
    if (nsafe > 0) {
        memcpy(order, safe, sizeof(int) * (size_t)nsafe);
        no = nsafe;
        *reason = R_DEFENCE;
    }
    double deadline = e->deadline;
    int64_t limit = e->limit;
    int hint = nsafe > 0 ? -1 : tempo_threat(e, side);
    if (e->oom) return -1;
    if (hint >= 0) {
        int at = -1;
        for (int i = 0; i < no; i++)
            if (order[i] == hint) at = i;
        if (at >= 0) {
            for (int i = at; i < no - 1; i++) order[i] = order[i + 1];
            no--;
        }
        int pos = no < ROOT_WIDTH - 1 ? no : ROOT_WIDTH - 1;
        for (int i = no; i > pos; i--) order[i] = order[i - 1];
        order[pos] = hint;
        no++;
    }
    int nr = no < ROOT_WIDTH ? no : ROOT_WIDTH;
    memcpy(rootm, order, sizeof(int) * (size_t)nr);
    double share = (nsafe > 0 && nr <= FEW) || hint >= 0 ? DEFENCE_SHARE : SEARCH_SHARE;
    double t = now();
    e->deadline = t + (deadline - t) * share;
    e->limit = e->nodes + (int64_t)((double)(limit - e->nodes) * share);
    int best = iterate(e, side, rootm, nr, order + nr, no - nr);
    e->deadline = deadline;
    e->limit = limit;
    if (e->oom) return -1;
    int nc = 0;
    checks[nc++] = best;
    if (hint >= 0 && hint != best) checks[nc++] = hint;
    int first = nc;
    for (int i = 0; i < no && i < VCT_CHECKS; i++) {
        int dup = 0;
        for (int j = 0; j < first; j++)
            if (checks[j] == order[i]) dup = 1;
        if (!dup) checks[nc++] = order[i];
    }
    return no_vct_after(e, side, checks, nc, hint);
}

/* --- the Python type ---------------------------------------------------------------------- */

static void set_board(Engine *e, const char *board) {
    for (int w = 0; w < e->nwin; w++) e->code[w] = 0;
    for (int c = 0; c < e->n; c++) {
        e->stone[c] = -1;
        e->near[c] = 0;
        e->gx[c] = e->gx0[c];
        e->gs[c] = e->gs0[c];
    }
    e->score[0] = e->score[1] = 0;
    for (int s = 0; s < 2; s++) {
        for (int w = 0; w < e->nwin; w++) e->fours[s].pos[w] = e->threes[s].pos[w] = -1;
        e->fours[s].len = e->threes[s].len = 0;
    }
    e->stones = 0;
    e->hash = 0;
    e->undo_len = 0;
    for (int c = 0; c < e->n; c++)
        if (board[c]) place(e, c, board[c] - 1);
    e->undo_len = 0;
}

static void Engine_dealloc(Engine *e) {
    PyMem_Free(e->wcells);
    PyMem_Free(e->thr_start);
    PyMem_Free(e->thr);
    PyMem_Free(e->around_start);
    PyMem_Free(e->around);
    PyMem_Free(e->zob);
    PyMem_Free(e->steps);
    PyMem_Free(e->gx0);
    PyMem_Free(e->gs0);
    PyMem_Free(e->code);
    for (int s = 0; s < 2; s++) {
        PyMem_Free(e->fours[s].pos);
        PyMem_Free(e->fours[s].items);
        PyMem_Free(e->threes[s].pos);
        PyMem_Free(e->threes[s].items);
        map_free(&e->refuted_vcf[s]);
        map_free(&e->refuted_vct[s]);
    }
    map_free(&e->table);
    Py_TYPE(e)->tp_free((PyObject *)e);
}

/* A flat int array from a list of int sequences; ``start`` gets the offsets (len + 1). */
static int *flatten(PyObject *seqs, int **start, Py_ssize_t *count) {
    Py_ssize_t n = PyList_Size(seqs), total = 0;
    if (n < 0) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) total += PySequence_Size(PyList_GET_ITEM(seqs, i));
    int *flat = PyMem_Malloc(sizeof(int) * (size_t)(total + 1));
    *start = PyMem_Malloc(sizeof(int) * (size_t)(n + 1));
    if (!flat || !*start) {
        PyErr_NoMemory();
        return NULL;
    }
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *seq = PySequence_Fast(PyList_GET_ITEM(seqs, i), "a sequence of ints");
        if (!seq) return NULL;
        (*start)[i] = (int)at;
        for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(seq); j++)
            flat[at++] = (int)PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, j));
        Py_DECREF(seq);
    }
    (*start)[n] = (int)at;
    *count = n;
    return PyErr_Occurred() ? NULL : flat;
}

/* Engine(k, rows, cols, window_cells, through, around, zobrist, steps, gains)
 * window_cells: a tuple of K cells per window; through: window indices per cell; around:
 * the cells within two of each cell; zobrist: two lists of n keys; steps: for side 0 and
 * 1, per window code, None or (dx, dsum, sx, so, ((who, kind, add), ...)); gains: (x,
 * both) per cell on the empty board. */
static int Engine_init(Engine *e, PyObject *args, PyObject *kw) {
    PyObject *wc, *thr, *around, *zob, *steps, *gains;
    if (e->code) {
        PyErr_SetString(PyExc_RuntimeError, "an Engine is made once");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "iiiO!O!O!O!O!O!", &e->k, &e->rows, &e->cols, &PyList_Type, &wc, &PyList_Type,
                          &thr, &PyList_Type, &around, &PyList_Type, &zob, &PyList_Type, &steps, &PyList_Type,
                          &gains))
        return -1;
    e->n = e->rows * e->cols;
    e->size = e->k + 2;
    if (e->n > MAXC || e->k < 3 || e->k > 15) {
        PyErr_SetString(PyExc_ValueError, "board too large for the gomoku core");
        return -1;
    }
    Py_ssize_t nwin, nthr, nar;
    int *wstart;
    int *flat = flatten(wc, &wstart, &nwin);
    if (!flat) return -1;
    e->nwin = (int)nwin;
    e->wcells = PyMem_Malloc(sizeof(int16_t) * (size_t)(nwin * e->k));
    for (Py_ssize_t i = 0; i < nwin * e->k; i++) e->wcells[i] = (int16_t)flat[i];
    PyMem_Free(flat);
    PyMem_Free(wstart);
    e->thr = flatten(thr, &e->thr_start, &nthr);
    if (!e->thr) return -1;
    e->around = flatten(around, &e->around_start, &nar);
    if (!e->around) return -1;
    if (nthr != e->n || nar != e->n || PyList_Size(zob) != 2 || PyList_Size(steps) != 2 ||
        PyList_Size(gains) != e->n) {
        PyErr_SetString(PyExc_ValueError, "tables of the wrong size");
        return -1;
    }
    e->zob = PyMem_Malloc(sizeof(uint64_t) * 2 * (size_t)e->n);
    e->steps = PyMem_Calloc(2 * (size_t)(e->size * e->size), sizeof(Step));
    e->gx0 = PyMem_Malloc(sizeof(int64_t) * (size_t)e->n);
    e->gs0 = PyMem_Malloc(sizeof(int64_t) * (size_t)e->n);
    e->code = PyMem_Calloc((size_t)nwin, sizeof(int));
    for (int s = 0; s < 2; s++) {
        e->fours[s].pos = PyMem_Malloc(sizeof(int) * (size_t)nwin);
        e->fours[s].items = PyMem_Malloc(sizeof(int) * (size_t)nwin);
        e->threes[s].pos = PyMem_Malloc(sizeof(int) * (size_t)nwin);
        e->threes[s].items = PyMem_Malloc(sizeof(int) * (size_t)nwin);
        if (!e->fours[s].pos || !e->fours[s].items || !e->threes[s].pos || !e->threes[s].items) {
            PyErr_NoMemory();
            return -1;
        }
    }
    if (!e->zob || !e->steps || !e->gx0 || !e->gs0 || !e->code) {
        PyErr_NoMemory();
        return -1;
    }
    for (int s = 0; s < 2; s++) {
        PyObject *keys = PyList_GET_ITEM(zob, s);
        if (!PyList_Check(keys) || PyList_Size(keys) != e->n) {
            PyErr_SetString(PyExc_ValueError, "zobrist keys of the wrong size");
            return -1;
        }
        for (int c = 0; c < e->n; c++) e->zob[s * e->n + c] = PyLong_AsUnsignedLongLong(PyList_GET_ITEM(keys, c));
        PyObject *table = PyList_GET_ITEM(steps, s);
        if (!PyList_Check(table) || PyList_Size(table) != e->size * e->size) {
            PyErr_SetString(PyExc_ValueError, "steps of the wrong size");
            return -1;
        }
        for (int code = 0; code < e->size * e->size; code++) {
            PyObject *t = PyList_GET_ITEM(table, code);
            Step *st = &e->steps[s * e->size * e->size + code];
            if (t == Py_None) continue;
            PyObject *ev;
            long long dx, dsum, sx, so;
            if (!PyArg_ParseTuple(t, "LLLLO", &dx, &dsum, &sx, &so, &ev)) return -1;
            st->valid = 1;
            st->dx = dx;
            st->dsum = dsum;
            st->sx = sx;
            st->so = so;
            Py_ssize_t nev = PyTuple_Size(ev);
            if (nev < 0 || nev > 4) {
                PyErr_SetString(PyExc_ValueError, "bad step events");
                return -1;
            }
            st->nev = (int)nev;
            for (Py_ssize_t i = 0; i < nev; i++) {
                int who, kind, add;
                if (!PyArg_ParseTuple(PyTuple_GET_ITEM(ev, i), "iii", &who, &kind, &add)) return -1;
                st->ev[i][0] = (int8_t)who;
                st->ev[i][1] = (int8_t)kind;
                st->ev[i][2] = (int8_t)add;
            }
        }
    }
    for (int c = 0; c < e->n; c++) {
        long long x, both;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(gains, c), "LL", &x, &both)) return -1;
        e->gx0[c] = x;
        e->gs0[c] = both;
    }
    if (PyErr_Occurred()) return -1;
    char empty[MAXC] = {0};
    set_board(e, empty);
    for (int i = 0; i < VCT_CHECK_MAX + 2; i++) e->killers[i] = -1;
    (void)kw;
    return 0;
}

static int read_board(Engine *e, PyObject *board, const char **out) {
    if (!e->code) {
        PyErr_SetString(PyExc_RuntimeError, "the Engine was not made (its __init__ not called)");
        return -1;
    }
    if (!PyBytes_Check(board) || PyBytes_GET_SIZE(board) != e->n) {
        PyErr_SetString(PyExc_ValueError, "the board is bytes, one a cell (0 empty, 1 X, 2 O)");
        return -1;
    }
    const char *b = PyBytes_AS_STRING(board);
    for (int c = 0; c < e->n; c++)
        if (b[c] < 0 || b[c] > 2) {
            PyErr_SetString(PyExc_ValueError, "a cell is 0, 1 or 2");
            return -1;
        }
    *out = b;
    return 0;
}

static const char *REASONS[] = {"win", "block", "search", "vcf", "vct", "defence"};

static int enter(Engine *e) {
    if (e->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the gomoku core is searching already (one search at a time)");
        return -1;
    }
    e->busy = 1;
    e->oom = 0;
    return 0;
}

/* decide(board, side, think_ms, nodes_budget, shuffle) -> (move, reason, nodes, scored,
 * reached, value); nodes_budget 0 for none. The search runs without the GIL. */
static PyObject *Engine_decide(Engine *e, PyObject *args) {
    PyObject *board, *shuffle;
    int side, think_ms;
    long long budget;
    const char *b;
    if (!PyArg_ParseTuple(args, "OiiLO", &board, &side, &think_ms, &budget, &shuffle)) return NULL;
    if (side != 0 && side != 1) {
        PyErr_SetString(PyExc_ValueError, "side is 0 (X) or 1 (O)");
        return NULL;
    }
    if (read_board(e, board, &b) < 0) return NULL;
    if (!memchr(b, 0, (size_t)e->n)) {
        PyErr_SetString(PyExc_ValueError, "the board is full: no move to choose");
        return NULL;
    }
    if (enter(e) < 0) return NULL;
    set_board(e, b);
    e->nodes = e->scored = 0;
    e->reached = 0;
    e->value = 0;
    for (int i = 0; i < VCT_CHECK_MAX + 2; i++) e->killers[i] = -1;
    e->think_s = think_ms / 1000.0;
    e->deadline = now() + e->think_s;
    e->budget = budget;
    e->limit = budget ? budget : ((int64_t)1 << 62);
    int reason = R_SEARCH, move;
    Py_BEGIN_ALLOW_THREADS
    move = decide_first(e, side, &reason);
    Py_END_ALLOW_THREADS
    if (move < 0 && !e->oom) {
        /* rng.shuffle(moves), where the Python strategy calls it */
        PyObject *list = PyList_New(e->nmoves);
        for (int i = 0; list && i < e->nmoves; i++) PyList_SET_ITEM(list, i, PyLong_FromLong(e->moves[i]));
        PyObject *r = list ? PyObject_CallOneArg(shuffle, list) : NULL;
        if (!r || PyList_GET_SIZE(list) != e->nmoves) {
            Py_XDECREF(list);
            Py_XDECREF(r);
            e->busy = 0;
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "shuffle changed the number of moves");
            return NULL;
        }
        Py_DECREF(r);
        for (int i = 0; i < e->nmoves; i++) e->moves[i] = (int)PyLong_AsLong(PyList_GET_ITEM(list, i));
        Py_DECREF(list);
        if (PyErr_Occurred()) {
            e->busy = 0;
            return NULL;
        }
        Py_BEGIN_ALLOW_THREADS
        move = decide_rest(e, side, &reason);
        Py_END_ALLOW_THREADS
    }
    e->busy = 0;
    if (e->oom) return PyErr_NoMemory();
    return Py_BuildValue("isLLiL", move, REASONS[reason], (long long)e->nodes, (long long)e->scored, e->reached,
                         (long long)e->value);
}

/* threat_win(board, side, depth, nodes, after, by_nodes) -> (found or -1, ended, nodes) */
static PyObject *Engine_threat_win(Engine *e, PyObject *args) {
    PyObject *board;
    int side, depth, after, by_nodes;
    long long nodes;
    const char *b;
    if (!PyArg_ParseTuple(args, "OiiLip", &board, &side, &depth, &nodes, &after, &by_nodes)) return NULL;
    if (read_board(e, board, &b) < 0) return NULL;
    if (side != 0 && side != 1) {
        PyErr_SetString(PyExc_ValueError, "side is 0 (X) or 1 (O)");
        return NULL;
    }
    if (depth < 0 || depth > VCT_CHECK_MAX + 1) { /* the killers are kept by depth */
        PyErr_Format(PyExc_ValueError, "depth is 0 to %d threats", VCT_CHECK_MAX + 1);
        return NULL;
    }
    if (after < -1 || after >= e->n || (after >= 0 && b[after])) {
        PyErr_SetString(PyExc_ValueError, "after is -1 or an empty cell");
        return NULL;
    }
    if (enter(e) < 0) return NULL;
    set_board(e, b);
    e->nodes = 0;
    e->deadline = 1e300;
    e->limit = nodes;
    e->budget = by_nodes;
    e->vct_until_time = 1e300;
    e->vct_until_nodes = nodes;
    Map temp = {0};
    jmp_buf saved;
    int mark;
    volatile int found = -1, ended = 1;
    Py_BEGIN_ALLOW_THREADS
    HOLD(e, saved, mark);
    if (setjmp(e->out) == 0) {
        found = after >= 0 ? vct_after(e, 1 - side, after, depth, &temp, -1) : vct(e, side, depth, &temp, -1);
    } else {
        unwind(e, mark);
        ended = 0;
    }
    RELEASE(e, saved);
    Py_END_ALLOW_THREADS
    e->busy = 0;
    map_free(&temp);
    if (e->oom) return PyErr_NoMemory();
    return Py_BuildValue("iiL", ended ? found : -1, ended && (found >= 0 || e->nodes < nodes), (long long)e->nodes);
}

static PyObject *Engine_kept(Engine *e, PyObject *Py_UNUSED(ignored)) {
    size_t n = e->table.len;
    for (int s = 0; s < 2; s++) n += e->refuted_vcf[s].len + e->refuted_vct[s].len;
    return PyLong_FromSize_t(n);
}

static PyObject *Engine_forget(Engine *e, PyObject *Py_UNUSED(ignored)) {
    map_free(&e->table);
    for (int s = 0; s < 2; s++) {
        map_free(&e->refuted_vcf[s]);
        map_free(&e->refuted_vct[s]);
    }
    Py_RETURN_NONE;
}

static PyMethodDef Engine_methods[] = {
    {"decide", (PyCFunction)Engine_decide, METH_VARARGS, "The move, as GomokuStrategy._decide chooses it."},
    {"threat_win", (PyCFunction)Engine_threat_win, METH_VARARGS, "GomokuStrategy.threat_win."},
    {"kept", (PyCFunction)Engine_kept, METH_NOARGS, "Entries kept from move to move."},
    {"forget", (PyCFunction)Engine_forget, METH_NOARGS, "Clear what is kept from move to move."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject EngineType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "bots.strategies._gomoku_core.Engine",
    .tp_basicsize = sizeof(Engine),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Engine_init,
    .tp_dealloc = (destructor)Engine_dealloc,
    .tp_methods = Engine_methods,
    .tp_doc = "The gomoku search on one variant's board (see bots/strategies/gomoku_core.py).",
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_gomoku_core", .m_doc = "The gomoku search in C.", .m_size = -1,
};

PyMODINIT_FUNC PyInit__gomoku_core(void) {
    if (PyType_Ready(&EngineType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&EngineType);
    if (PyModule_AddObject(m, "Engine", (PyObject *)&EngineType) < 0) {
        Py_DECREF(&EngineType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
