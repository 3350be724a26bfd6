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

/* The event's positions and values, then w . x (unseen keys at the sink, position 0, of weight
 * 0) and ||x||^2: `pos` gets each key's position (-1 for an unseen key), `val` its value.
 * In phases (look every key up, then read the positions, then the weights) so that the cache
 * misses of a large vocabulary overlap instead of running one after the other.
 * Returns 1, 0 for "not the plain case" or -1 with an exception set. */
static int scan(PyObject *x, PyObject *positions, const double *w, Py_ssize_t size,
                Scratch *sc, double *dot, double *sq, Py_ssize_t *n_unseen) {
    Py_ssize_t i = 0, n = 0, unseen = 0, j, *pos = sc->pos;
    double *val = sc->val;
    PyObject **found = sc->found;
    PyObject *key, *value;
    int ok = 1;
    while (PyDict_Next(x, &i, &key, &value)) {
        if (n == sc->cap || !PyUnicode_CheckExact(key) || !plain_value(value, &val[n])) {
            ok = 0; /* n == cap: x grew under the scan (a key's __eq__, below) */
            break;
        }
        /* held: a stored key of a user's class may run its __eq__ during the lookup, which
         * may change x, and learning inserts these very key objects */
        Py_INCREF(key);
        sc->keys[sc->n_keys++] = key;
        PyObject *p = PyDict_GetItemWithError(positions, key);
        if (p == NULL && PyErr_Occurred()) {
            ok = -1;
            break;
        }
        Py_XINCREF(p); /* held: such an __eq__ may also change `positions` */
        found[n++] = p;
    }
    if (ok == 1 && (n != sc->cap || n != PyDict_GET_SIZE(x)))
        ok = 0; /* changed under the scan: its keys and values are not one event's */
    for (j = 0; j < n; j++) {
        PyObject *p = found[j];
        pos[j] = -1;
        if (p == NULL)
            unseen++;
        else {
            if (ok == 1) {
                Py_ssize_t at = PyLong_CheckExact(p) ? PyLong_AsSsize_t(p) : -1;
                if (at <= 0 || at >= size) {
                    PyErr_Clear();
                    ok = 0;
                } else {
                    pos[j] = at;
                    __builtin_prefetch(&w[at]);
                }
            }
            Py_DECREF(p);
        }
    }
    if (ok < 1)
        return ok;
    double s = 0.0, q = 0.0;
    for (j = 0; j < n; j++) {
        double v = val[j];
        s += w[pos[j] >= 0 ? pos[j] : 0] * v;
        q += v * v;
    }
    *dot = s;
    *sq = q;
    *n_unseen = unseen;
    return 1;
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
"margin(x, positions, w, b) -> float | None\n\n"
"w . x + b of the feature dict `x` (keys looked up in the dict `positions`; unseen keys add\n"
"nothing), or None when `x` or `positions` is not the plain case (exact dicts; see the\n"
"module).");

static PyObject *margin(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "margin(x, positions, w, b)");
        return NULL;
    }
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
    int ok = scan(args[0], args[1], (const double *)view.buf, view.len / 8, &sc, &dot, &sq,
                  &unseen);
    PyBuffer_Release(&view);
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
"learn(x, positions, w, b, intercept, task, variant, c, epsilon, y, max_keys)\n"
"    -> (b, step, n_new) | None\n\n"
"One PA step on the feature dict `x`, in place on `w` and `positions`: the unseen keys get\n"
"positions (len(positions) + 1, ...), then w[p] += step * value. Returns the new intercept,\n"
"the signed step and the number of keys inserted, or None with nothing changed when `x` is not\n"
"the plain case, the keys would pass `max_keys` or `w`'s length, or the step would leave\n"
"float64 (river_pa.linear_model._numba.update).");

static PyObject *learn(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "learn(x, positions, w, b, intercept, task, variant, c, "
                        "epsilon, y, max_keys)");
        return NULL;
    }
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
    int ok = scan(x, positions, w, size, &sc, &dot, &sq, &unseen);
    if (ok > 0 && PyDict_GET_SIZE(positions) != held)
        ok = 0; /* a key's __eq__ made the model learn during the scan */
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

PyMODINIT_FUNC PyInit__dictstep(void) { return PyModule_Create(&module); }
