/* One Passive-Aggressive step read straight from a feature dict (issue 18): optional.
 *
 * `SparseLinear` (river_pa/linear_model/base.py) turns a dict into position and value arrays and
 * calls Numba kernels; on events of a few dozen keys that glue (key and value tuples, packing,
 * the kernel dispatch) costs more than the arithmetic. These two functions read the dict, the
 * vocabulary (a dict of key -> position) and the weights in one call. They compute exactly
 * what the Numba path computes, in the same order: w . x summed over the keys in the dict's
 * order, the intercept added last, the step of `river_pa._core._numba.step_size` and
 * `river_pa.linear_model._numba.update` (build with -ffp-contract=off: no fused multiply-adds,
 * so the bits are those of the Numba kernels and of plain Python).
 *
 * `margin` keeps its scan (the positions of the event's keys) in a `Scan` the model owns, and
 * `learn` on the same event takes it instead of looking the keys up again.
 *
 * They take only the plain case: keys that are exact str, values that are exact float or int
 * (bool included) and finite, a vocabulary with room. Anything else returns None before
 * anything changes, and the caller takes the Numba path, which validates, raises the errors
 * that name the field, grows the weights and inserts the keys. (A subclass of int or float may
 * override __float__, which the Numba path's struct.pack calls: not the plain case.)
 *
 * Built as river_pa.linear_model._dictstep (pyproject.toml's ext-modules), optional: without a
 * C compiler the package installs without it and every event takes the Numba path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

enum { CLASSIFY = 0, REGRESS = 1 };
enum { PA = 0, PA_I = 1, PA_II = 2 };
#define STACK_KEYS 128

/* Per-call buffers of an event: its keys (held: `n_keys` references), their positions and
 * values, and the vocabulary's int objects; on the stack up to STACK_KEYS keys. */
typedef struct {
    Py_ssize_t cap, n_keys, *pos;
    double *val;
    PyObject **found, **keys;
    Py_ssize_t stack_pos[STACK_KEYS];
    double stack_val[STACK_KEYS];
    PyObject *stack_found[STACK_KEYS], *stack_keys[STACK_KEYS];
} Scratch;

static int scratch_init(Scratch *sc, Py_ssize_t n) {
    sc->cap = n;
    sc->n_keys = 0;
    sc->pos = sc->stack_pos;
    sc->val = sc->stack_val;
    sc->found = sc->stack_found;
    sc->keys = sc->stack_keys;
    if (n <= STACK_KEYS)
        return 0;
    sc->pos = PyMem_Malloc(n * sizeof(Py_ssize_t));
    sc->val = PyMem_Malloc(n * sizeof(double));
    sc->found = PyMem_Malloc(n * sizeof(PyObject *));
    sc->keys = PyMem_Malloc(n * sizeof(PyObject *));
    if (sc->pos != NULL && sc->val != NULL && sc->found != NULL && sc->keys != NULL)
        return 0;
    PyMem_Free(sc->pos);
    PyMem_Free(sc->val);
    PyMem_Free(sc->found);
    PyMem_Free(sc->keys);
    sc->pos = sc->stack_pos; /* nothing for scratch_free to free */
    PyErr_NoMemory();
    return -1;
}

static void scratch_free(Scratch *sc) {
    for (Py_ssize_t j = 0; j < sc->n_keys; j++)
        Py_DECREF(sc->keys[j]);
    if (sc->pos != sc->stack_pos) {
        PyMem_Free(sc->pos);
        PyMem_Free(sc->val);
        PyMem_Free(sc->found);
        PyMem_Free(sc->keys);
    }
}

/* The scan `margin` made of its last plain event, so that `learn` on the same event skips the
 * vocabulary lookups (predict_one(x) then learn_one(x, y): 10% of the time on a text stream).
 * It holds the vocabulary and the keys, so equal pointers are the same objects; `learn` takes
 * it only if the event holds the very same keys in the same order and the vocabulary is the
 * same dict at the same size (it only grows: a key keeps its position). The event's address
 * is only a quick test, not held: the user's dict is not kept alive, and any dict with those
 * keys in that order has those positions (its values are read again). */
typedef struct {
    PyObject_HEAD
    const void *x;
    PyObject *positions;
    Py_ssize_t n, held;
    PyObject *keys[STACK_KEYS];
    Py_ssize_t pos[STACK_KEYS];
} ScanObject;

/* Put the scan of `n` keys (references taken over) in `memo`, or nothing with n = -1; then
 * release what it held before: the vocabulary's release may run Python code (a key of a
 * user's class), which then finds the memo whole. */
static void memo_put(ScanObject *memo, const void *x, PyObject *positions, Py_ssize_t held,
                     PyObject **keys, const Py_ssize_t *pos, Py_ssize_t n) {
    PyObject *old_positions = memo->positions, *old_keys[STACK_KEYS];
    Py_ssize_t old_n = memo->n;
    memcpy(old_keys, memo->keys, old_n * sizeof(PyObject *));
    memo->n = 0;
    memo->x = NULL;
    memo->positions = NULL;
    if (n >= 0) {
        memcpy(memo->keys, keys, n * sizeof(PyObject *));
        memcpy(memo->pos, pos, n * sizeof(Py_ssize_t));
        memo->x = x;
        memo->positions = Py_NewRef(positions);
        memo->held = held;
        memo->n = n;
    }
    for (Py_ssize_t j = 0; j < old_n; j++)
        Py_DECREF(old_keys[j]);
    Py_XDECREF(old_positions);
}

static void memo_clear(ScanObject *memo) { memo_put(memo, NULL, NULL, 0, NULL, NULL, -1); }

/* Tracked by the garbage collector: a vocabulary's key of a user's class may refer back to the
 * model that holds the memo. */
static int scan_traverse(ScanObject *memo, visitproc visit, void *arg) {
    Py_VISIT(memo->positions);
    for (Py_ssize_t j = 0; j < memo->n; j++)
        Py_VISIT(memo->keys[j]);
    return 0;
}

static int scan_clear(ScanObject *memo) {
    memo_clear(memo);
    return 0;
}

static void scan_dealloc(ScanObject *memo) {
    PyObject_GC_UnTrack(memo);
    memo_clear(memo);
    Py_TYPE(memo)->tp_free((PyObject *)memo);
}

/* Copies and pickles of a model get an empty memo: it is a cache of the last event. */
static PyObject *scan_reduce(PyObject *self, PyObject *unused) {
    return Py_BuildValue("(O())", (PyObject *)Py_TYPE(self));
}

static PyObject *scan_copy(PyObject *self, PyObject *unused) {
    return PyObject_CallNoArgs((PyObject *)Py_TYPE(self));
}

static PyMethodDef scan_methods[] = {
    {"__reduce__", scan_reduce, METH_NOARGS, NULL},
    {"__copy__", scan_copy, METH_NOARGS, NULL},
    {"__deepcopy__", scan_copy, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ScanType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "river_pa.linear_model._dictstep.Scan",
    .tp_doc = PyDoc_STR("Scan(): the last plain event `margin` scanned, for `learn` (a cache; "
                        "copies and pickles are empty)."),
    .tp_basicsize = sizeof(ScanObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)scan_dealloc,
    .tp_traverse = (traverseproc)scan_traverse,
    .tp_clear = (inquiry)scan_clear,
    .tp_methods = scan_methods,
};

/* The weights: a C-contiguous float64 buffer (the model's numpy array), writable to learn. */
static int get_weights(PyObject *obj, Py_buffer *view, int writable) {
    int flags = PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return -1;
    if (view->itemsize != 8 || view->format == NULL || strcmp(view->format, "d") != 0) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_TypeError, "the weights must be a float64 array");
        return -1;
    }
    return 0;
}

/* A value of the plain case, or 0 (no exception set) when the caller must take the Numba
 * path: not an exact float or int, or not finite. */
static int plain_value(PyObject *v, double *out) {
    double d;
    if (PyFloat_CheckExact(v))
        d = PyFloat_AS_DOUBLE(v);
    else if (PyLong_CheckExact(v) || PyBool_Check(v)) { /* float(v), correctly rounded */
        d = PyLong_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
    } else
        return 0;
    if (!isfinite(d))
        return 0;
    *out = d;
    return 1;
}

/* An event's keys (held) and values into `sc`. No Python code runs here: the keys and values
 * are one event's. Returns 1, or 0 for "not the plain case". */
static int read_event(PyObject *x, Scratch *sc) {
    Py_ssize_t i = 0, n = 0;
    PyObject *key, *value;
    while (PyDict_Next(x, &i, &key, &value)) {
        if (n == sc->cap || !PyUnicode_CheckExact(key) || !plain_value(value, &sc->val[n]))
            return 0;
        __builtin_prefetch(key); /* its hash, which the lookup reads */
        /* held: a stored key of a user's class may run its __eq__ during the lookup, which
         * may change x, and learning inserts these very key objects */
        sc->keys[n++] = Py_NewRef(key);
        sc->n_keys = n;
    }
    return n == sc->cap; /* else x changed since its size was read */
}

/* The positions of the event's keys in `sc->pos` (-1 for an unseen key) and their count in
 * `n_unseen`: every key looked up, then the positions read, so that the cache misses of a
 * large vocabulary overlap instead of running one after the other. Returns 1, 0 for "not the
 * plain case" or -1 with an exception set. */
static int look_up(PyObject *positions, Py_ssize_t size, const double *w, Scratch *sc,
                   Py_ssize_t *n_unseen) {
    Py_ssize_t n = sc->n_keys, unseen = 0, j;
    PyObject **found = sc->found;
    int ok = 1;
    for (j = 0; j < n; j++) {
        found[j] = PyDict_GetItemWithError(positions, sc->keys[j]);
        if (found[j] == NULL && PyErr_Occurred()) {
            ok = -1;
            n = j; /* found[j:] unset */
            break;
        }
        Py_XINCREF(found[j]); /* held: such an __eq__ may also change `positions` */
    }
    for (j = 0; j < n; j++) {
        PyObject *p = found[j];
        sc->pos[j] = -1;
        if (p == NULL)
            unseen++;
        else {
            if (ok == 1) {
                Py_ssize_t at = PyLong_CheckExact(p) ? PyLong_AsSsize_t(p) : -1;
                if (at <= 0 || at >= size) {
                    PyErr_Clear();
                    ok = 0;
                } else {
                    sc->pos[j] = at;
                    __builtin_prefetch(&w[at]);
                }
            }
            Py_DECREF(p);
        }
    }
    *n_unseen = unseen;
    return ok;
}

/* The scan of `memo` (see ScanObject) for `x`, taken over into `sc`, when it is this event's:
 * 1, else 0 with `sc` as it was (values aside). `memo` is emptied either way. */
static int from_memo(ScanObject *memo, PyObject *x, PyObject *positions, Py_ssize_t size,
                     const double *w, Scratch *sc, Py_ssize_t *n_unseen) {
    Py_ssize_t i = 0, j = 0, n = memo->n, unseen = 0;
    PyObject *key, *value;
    int same = memo->x == x && memo->positions == positions && n == sc->cap
               && memo->held == PyDict_GET_SIZE(positions);
    while (same && PyDict_Next(x, &i, &key, &value)) {
        same = j < n && key == memo->keys[j] && memo->pos[j] < size
               && plain_value(value, &sc->val[j]);
        j++;
    }
    if (!same || j != n) {
        memo_clear(memo);
        return 0;
    }
    for (j = 0; j < n; j++) {
        sc->keys[j] = memo->keys[j]; /* the references too */
        sc->pos[j] = memo->pos[j];
        if (sc->pos[j] >= 0)
            __builtin_prefetch(&w[sc->pos[j]]);
        else
            unseen++;
    }
    sc->n_keys = n;
    memo->n = 0;
    memo_clear(memo); /* positions: the caller holds it */
    *n_unseen = unseen;
    return 1;
}

/* w . x (unseen keys at the sink, position 0, of weight 0) and ||x||^2, summed in the
 * event's order. */
static void dot_sq(const double *w, const Scratch *sc, double *dot, double *sq) {
    double s = 0.0, q = 0.0;
    for (Py_ssize_t j = 0; j < sc->n_keys; j++) {
        double v = sc->val[j];
        s += w[sc->pos[j] >= 0 ? sc->pos[j] : 0] * v;
        q += v * v;
    }
    *dot = s;
    *sq = q;
}

/* The scan of an event: its keys, values and positions in `sc`, from `memo` when it holds
 * this event's, then w . x and ||x||^2. Returns 1, 0 for "not the plain case" (an event or a
 * vocabulary the lookups resized included) or -1 with an exception set. */
static int scan(PyObject *x, PyObject *positions, const double *w, Py_ssize_t size,
                ScanObject *memo, Scratch *sc, double *dot, double *sq, Py_ssize_t *n_unseen) {
    Py_ssize_t held = PyDict_GET_SIZE(positions);
    if (memo == NULL || !from_memo(memo, x, positions, size, w, sc, n_unseen)) {
        if (!read_event(x, sc))
            return 0;
        int ok = look_up(positions, size, w, sc, n_unseen);
        if (ok < 1)
            return ok;
        /* a stored key's __eq__, run by a lookup, added or removed keys of the event, or made
         * the model learn (the positions found may be stale): the Numba path reads both as
         * they are now (a value changed in place is not seen: the event is learned as it was
         * when the call began) */
        if (PyDict_GET_SIZE(x) != sc->n_keys || PyDict_GET_SIZE(positions) != held)
            return 0;
    }
    dot_sq(w, sc, dot, sq);
    return 1;
}

/* The `memo` argument: a Scan, or None (NULL). Returns 0, or -1 with an exception set. */
static int get_memo(PyObject *arg, ScanObject **memo) {
    *memo = NULL;
    if (arg == Py_None)
        return 0;
    if (!PyObject_TypeCheck(arg, &ScanType)) {
        PyErr_SetString(PyExc_TypeError, "memo must be a Scan or None");
        return -1;
    }
    *memo = (ScanObject *)arg;
    return 0;
}

/* tau of PA, PA-I or PA-II: river_pa._core._numba.step_size. */
static double step_size(int variant, double loss, double sq_norm, double c) {
    if (loss <= 0.0 || c <= 0.0 || sq_norm <= 0.0)
        return 0.0;
    if (variant == PA)
        return loss / sq_norm;
    if (variant == PA_I) {
        double t = loss / sq_norm;
        return t < c ? t : c;
    }
    return loss / (sq_norm + 1.0 / (2.0 * c));
}

/* The signed step: river_pa.linear_model._numba.signed_step. */
static double signed_step(int task, int variant, double margin, double y, double sq_norm,
                          double c, double epsilon) {
    if (task == CLASSIFY)
        return step_size(variant, 1.0 - y * margin, sq_norm, c) * y;
    double tau = step_size(variant, fabs(margin - y) - epsilon, sq_norm, c);
    return y > margin ? tau : -tau;
}

PyDoc_STRVAR(margin_doc,
"margin(x, positions, w, b, memo) -> float | None\n\n"
"w . x + b of the feature dict `x` (keys looked up in the dict `positions`; unseen keys add\n"
"nothing), or None when `x` or `positions` is not the plain case (exact dicts; see the\n"
"module). The scan goes into `memo` (a Scan, or None) for `learn` on the same event.");

static PyObject *margin(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "margin(x, positions, w, b, memo)");
        return NULL;
    }
    ScanObject *memo;
    if (get_memo(args[4], &memo) < 0)
        return NULL;
    if (!PyDict_CheckExact(args[0]) || !PyDict_CheckExact(args[1]))
        Py_RETURN_NONE;
    double b = PyFloat_AsDouble(args[3]);
    if (b == -1.0 && PyErr_Occurred())
        return NULL;
    Scratch sc;
    Py_buffer view;
    if (scratch_init(&sc, PyDict_GET_SIZE(args[0])) < 0)
        return NULL;
    if (get_weights(args[2], &view, 0) < 0) {
        scratch_free(&sc);
        return NULL;
    }
    double dot, sq;
    Py_ssize_t unseen;
    int ok = scan(args[0], args[1], (const double *)view.buf, view.len / 8, memo, &sc, &dot,
                  &sq, &unseen);
    PyBuffer_Release(&view);
    if (ok == 1 && memo != NULL && sc.n_keys <= STACK_KEYS) {
        memo_put(memo, args[0], args[1], PyDict_GET_SIZE(args[1]), sc.keys, sc.pos, sc.n_keys);
        sc.n_keys = 0; /* the references went to the memo */
    }
    scratch_free(&sc);
    if (ok < 0)
        return NULL;
    if (ok == 0)
        Py_RETURN_NONE;
    return PyFloat_FromDouble(b + dot);
}

/* Give the unseen keys of the event the next positions, in its order (Vocabulary.insert), and
 * write them into `pos`. Positions stay below `size` (the weights' length) even if a key's
 * __eq__, run by the insertion, made the model learn meanwhile: a key that would pass it, or
 * that such a learning inserted first, keeps the position the vocabulary holds (or none). */
static int insert_unseen(PyObject *positions, PyObject *const *keys, Py_ssize_t *pos,
                         Py_ssize_t n, Py_ssize_t size) {
    for (Py_ssize_t j = 0; j < n; j++) {
        if (pos[j] >= 0)
            continue;
        Py_ssize_t next = PyDict_GET_SIZE(positions) + 1;
        if (next >= size)
            return 0;
        PyObject *p = PyLong_FromSsize_t(next);
        if (p == NULL)
            return -1;
        PyObject *got = PyDict_SetDefault(positions, keys[j], p); /* borrowed */
        Py_DECREF(p);
        if (got == NULL)
            return -1;
        Py_ssize_t at = next;
        if (got != p) { /* inserted meanwhile */
            at = PyLong_CheckExact(got) ? PyLong_AsSsize_t(got) : -1;
            if (at == -1)
                PyErr_Clear(); /* an overflow: no position */
        }
        pos[j] = at > 0 && at < size ? at : -1;
    }
    return 0;
}

PyDoc_STRVAR(learn_doc,
"learn(x, positions, w, b, intercept, task, variant, c, epsilon, y, max_keys, memo)\n"
"    -> (b, step, n_new) | None\n\n"
"One PA step on the feature dict `x`, in place on `w` and `positions`: the unseen keys get\n"
"positions (len(positions) + 1, ...), then w[p] += step * value. Returns the new intercept,\n"
"the signed step and the number of keys inserted, or None with nothing changed when `x` is not\n"
"the plain case, the keys would pass `max_keys` or `w`'s length, or the step would leave\n"
"float64 (river_pa.linear_model._numba.update). It takes the scan of `margin` from `memo` (a\n"
"Scan, or None) when that was this event's, and leaves `memo` empty.");

static PyObject *learn(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 12) {
        PyErr_SetString(PyExc_TypeError, "learn(x, positions, w, b, intercept, task, variant, c, "
                        "epsilon, y, max_keys, memo)");
        return NULL;
    }
    ScanObject *memo;
    if (get_memo(args[11], &memo) < 0)
        return NULL;
    if (!PyDict_CheckExact(args[0]) || !PyDict_CheckExact(args[1]))
        Py_RETURN_NONE;
    PyObject *x = args[0], *positions = args[1];
    double b = PyFloat_AsDouble(args[3]), intercept = PyFloat_AsDouble(args[4]);
    long task = PyLong_AsLong(args[5]), variant = PyLong_AsLong(args[6]);
    double c = PyFloat_AsDouble(args[7]), epsilon = PyFloat_AsDouble(args[8]);
    double y = PyFloat_AsDouble(args[9]);
    if (PyErr_Occurred())
        return NULL;
    /* max_keys may be any number (Vocabulary.check_room compares it); other than an int of C
     * size (-1 here), an event with new keys is left to that check */
    Py_ssize_t max_keys = PyLong_CheckExact(args[10]) ? PyLong_AsSsize_t(args[10]) : -1;
    if (max_keys == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return NULL;
        PyErr_Clear();
    }
    Py_ssize_t n = PyDict_GET_SIZE(x);
    Scratch sc;
    if (scratch_init(&sc, n) < 0)
        return NULL;
    Py_ssize_t *pos = sc.pos;
    double *val = sc.val;
    PyObject *result = NULL;
    Py_buffer view;
    if (get_weights(args[2], &view, 1) < 0)
        goto done;
    double *w = (double *)view.buf;
    Py_ssize_t size = view.len / 8, unseen, held = PyDict_GET_SIZE(positions);
    double dot, sq;
    int ok = scan(x, positions, w, size, memo, &sc, &dot, &sq, &unseen);
    if (ok <= 0 || (unseen && (held + unseen > max_keys || held + 1 + unseen > size))) {
        if (ok >= 0)
            result = Py_NewRef(Py_None);
        goto release;
    }
    double step = signed_step((int)task, (int)variant, b + dot, y, sq + intercept, c, epsilon);
    double b_new = b + step * intercept;
    if (step != 0.0) { /* the step must keep every weight it moves finite (_numba._fits) */
        int fits = fabs(b_new) < INFINITY;
        for (Py_ssize_t j = 0; j < n && fits; j++)
            fits = fabs((pos[j] >= 0 ? w[pos[j]] : 0.0) + step * val[j]) < INFINITY;
        if (!fits) {
            result = Py_NewRef(Py_None);
            goto release;
        }
    }
    if (unseen && insert_unseen(positions, sc.keys, pos, n, size) < 0)
        goto release; /* MemoryError: the keys inserted so far hold weight 0, as unseen */
    if (step != 0.0) {
        for (Py_ssize_t j = 0; j < n; j++)
            if (pos[j] >= 0) /* always, unless a key's __eq__ made the model learn */
                w[pos[j]] += step * val[j];
        b = b_new;
    }
    result = Py_BuildValue("ddn", b, step, unseen);
release:
    PyBuffer_Release(&view);
done:
    scratch_free(&sc);
    return result;
}

static PyMethodDef methods[] = {
    {"margin", (PyCFunction)(void (*)(void))margin, METH_FASTCALL, margin_doc},
    {"learn", (PyCFunction)(void (*)(void))learn, METH_FASTCALL, learn_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_dictstep",
    "One Passive-Aggressive step read straight from a feature dict (optional C extension).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__dictstep(void) {
    if (PyType_Ready(&ScanType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddObjectRef(m, "Scan", (PyObject *)&ScanType) < 0)
        Py_CLEAR(m);
    return m;
}
