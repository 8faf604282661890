/* The direct call path of jf.function, in C.
 *
 * `FunctionBase` is the base class of `jitflow.runtime.function.Function`. Its tp_call
 * handles the common call - positional eager tensors whose (dtype, shape)s have a settled
 * concrete function - without running any Python before the plan itself: check the
 * arguments, build the (dtype, shape, ...) key, look it up in `_direct`, call the runner.
 * Everything else (keyword arguments, other argument types, a trace in progress, a
 * GradientTape recording, profiling on, a key not in the table) goes to the Python method
 * `self._call_general(*args, **kwargs)`. `direct_call.py` has the same logic in Python
 * for installs without a C compiler; the two must agree (tests run both).
 *
 * Why C: a compiled graph of a few ops runs in ~0.3 us, and the Python around it (one
 * frame, the checks, the key) costs as much again; TensorFlow and JAX moved the same path
 * to C++ for the same reason.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define ABI_VERSION 2  /* bump when the Python side's expectations change */

typedef struct {
    PyObject_HEAD
    PyObject *direct;        /* dict: (dtype, shape, ...) -> runner(*arrays) */
    Py_ssize_t arity;        /* positional parameters; -1 turns the direct path off */
    Py_ssize_t call_count;   /* every call, direct or not (the retrace warning counts them) */
} FunctionBase;

/* Set once by configure(): what the checks read. */
static PyTypeObject *eager_type = NULL;          /* EagerTensor (exact type only) */
static Py_ssize_t value_offset = -1;             /* EagerTensor._value slot */
static Py_ssize_t dtype_offset = -1;             /* EagerTensor._dtype slot */
static Py_ssize_t device_offset = -1;            /* EagerTensor._device slot */
static PyTypeObject *ndarray_type = NULL;        /* numpy.ndarray */
static PyObject *host_device = NULL;             /* the device string of host tensors */
static PyObject *context_dict = NULL;            /* runtime.context.__dict__ */
static PyObject *registry_dict = NULL;           /* runtime.ops.registry.__dict__ */
static PyObject *instrument_dict = NULL;         /* runtime.instrument.__dict__ */
static PyObject *str_scopes_open, *str_tape_active, *str_enabled, *str_shape, *str_call_general;

static Py_ssize_t
slot_offset(PyTypeObject *type, const char *name)
{
    PyObject *descr = PyDict_GetItemString(type->tp_dict, name);  /* borrowed */
    if (descr == NULL || Py_TYPE(descr) != &PyMemberDescr_Type) {
        PyErr_Format(PyExc_TypeError, "configure: %s.%s must be a __slots__ member",
                     type->tp_name, name);
        return -1;
    }
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    if (member->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "configure: %s.%s is not an object slot", type->tp_name, name);
        return -1;
    }
    return member->offset;
}

/* True when a module-level flag is set (missing counts as set: take the general path). */
static int
flag_set(PyObject *dict, PyObject *name)
{
    PyObject *value = PyDict_GetItemWithError(dict, name);  /* borrowed */
    if (value == NULL) {
        PyErr_Clear();
        return 1;
    }
    if (value == Py_False) {
        return 0;
    }
    if (PyLong_CheckExact(value)) {
        Py_ssize_t count = PyLong_AsSsize_t(value);
        if (count == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 1;
        }
        return count != 0;
    }
    return value != Py_None;
}

static PyObject *
call_general(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *method = PyObject_GetAttr(self, str_call_general);
    if (method == NULL) {
        return NULL;
    }
    PyObject *result = PyObject_Call(method, args, kwargs);
    Py_DECREF(method);
    return result;
}

#define MAX_DIRECT_ARITY 16

/* EagerTensor(array, dtype) on the host, as its __init__ would build it (steals both). */
static PyObject *
wrap(PyObject *array, PyObject *dtype)
{
    PyObject *tensor = eager_type->tp_alloc(eager_type, 0);
    if (tensor == NULL) {
        Py_DECREF(array);
        Py_DECREF(dtype);
        return NULL;
    }
    Py_INCREF(host_device);
    *(PyObject **)((char *)tensor + value_offset) = array;
    *(PyObject **)((char *)tensor + dtype_offset) = dtype;
    *(PyObject **)((char *)tensor + device_offset) = host_device;
    return tensor;
}

static PyObject *
FunctionBase_call(FunctionBase *self, PyObject *args, PyObject *kwargs)
{
    self->call_count++;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n != self->arity || n > MAX_DIRECT_ARITY || self->direct == NULL || eager_type == NULL
            || (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)
            || flag_set(context_dict, str_scopes_open) || flag_set(registry_dict, str_tape_active)
            || flag_set(instrument_dict, str_enabled)) {
        return call_general((PyObject *)self, args, kwargs);
    }
    PyObject *values[MAX_DIRECT_ARITY];
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *arg = PyTuple_GET_ITEM(args, i);
        if (Py_TYPE(arg) != eager_type) {
            return call_general((PyObject *)self, args, kwargs);
        }
        values[i] = *(PyObject **)((char *)arg + value_offset);
        if (values[i] == NULL) {
            return call_general((PyObject *)self, args, kwargs);
        }
    }
    PyObject *key = PyTuple_New(2 * n);
    if (key == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *arg = PyTuple_GET_ITEM(args, i);
        PyObject *dtype = *(PyObject **)((char *)arg + dtype_offset);
        PyObject *shape = PyObject_GetAttr(values[i], str_shape);
        if (dtype == NULL || shape == NULL) {
            PyErr_Clear();
            Py_XDECREF(shape);
            Py_DECREF(key);
            return call_general((PyObject *)self, args, kwargs);
        }
        Py_INCREF(dtype);
        PyTuple_SET_ITEM(key, 2 * i, dtype);
        PyTuple_SET_ITEM(key, 2 * i + 1, shape);
    }
    PyObject *run = PyDict_GetItemWithError(self->direct, key);  /* borrowed */
    Py_DECREF(key);
    if (run == NULL) {
        if (PyErr_Occurred()) {
            PyErr_Clear();
        }
        return call_general((PyObject *)self, args, kwargs);
    }
    /* An entry is a runner, or (runner, dtype) for one output that the runner leaves as
       an array for us to wrap (saving EagerTensor.__init__'s Python frame). */
    PyObject *dtype = NULL;
    if (PyTuple_CheckExact(run)) {
        dtype = PyTuple_GET_ITEM(run, 1);
        run = PyTuple_GET_ITEM(run, 0);
    }
    Py_INCREF(run);  /* the table may change while it runs */
    Py_XINCREF(dtype);
    PyObject *result = PyObject_Vectorcall(run, values, (size_t)n, NULL);
    Py_DECREF(run);
    if (dtype == NULL || result == NULL) {
        Py_XDECREF(dtype);
        return result;
    }
    if (Py_TYPE(result) != ndarray_type) {  /* the runner wrapped it itself */
        Py_DECREF(dtype);
        return result;
    }
    return wrap(result, dtype);
}

static PyObject *
FunctionBase_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    FunctionBase *self = (FunctionBase *)type->tp_alloc(type, 0);
    if (self != NULL) {
        self->direct = PyDict_New();
        self->arity = -1;
        self->call_count = 0;
        if (self->direct == NULL) {
            Py_DECREF(self);
            return NULL;
        }
    }
    return (PyObject *)self;
}

static int
FunctionBase_traverse(FunctionBase *self, visitproc visit, void *arg)
{
    Py_VISIT(self->direct);
    return 0;
}

static int
FunctionBase_clear(FunctionBase *self)
{
    Py_CLEAR(self->direct);
    return 0;
}

static void
FunctionBase_dealloc(FunctionBase *self)
{
    PyObject_GC_UnTrack(self);
    FunctionBase_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef FunctionBase_members[] = {
    {"_direct", T_OBJECT, offsetof(FunctionBase, direct), READONLY,
     "settled concrete functions' runners by argument (dtype, shape, ...)"},
    {"_direct_arity", T_PYSSIZET, offsetof(FunctionBase, arity), 0,
     "positional parameters the direct path serves; -1: off"},
    {"_call_count", T_PYSSIZET, offsetof(FunctionBase, call_count), 0, "calls so far"},
    {NULL}
};

static PyTypeObject FunctionBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "jitflow.runtime.execution._direct.FunctionBase",
    .tp_doc = PyDoc_STR("Base of jf.Function: the direct call path in C (see direct_call.py)."),
    .tp_basicsize = sizeof(FunctionBase),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = FunctionBase_new,
    .tp_dealloc = (destructor)FunctionBase_dealloc,
    .tp_traverse = (traverseproc)FunctionBase_traverse,
    .tp_clear = (inquiry)FunctionBase_clear,
    .tp_call = (ternaryfunc)FunctionBase_call,
    .tp_members = FunctionBase_members,
};

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyObject *eager, *context, *registry, *instrument, *ndarray, *device;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!U:configure", &PyType_Type, &eager, &PyDict_Type, &context,
                          &PyDict_Type, &registry, &PyDict_Type, &instrument, &PyType_Type, &ndarray,
                          &device)) {
        return NULL;
    }
    Py_ssize_t value = slot_offset((PyTypeObject *)eager, "_value");
    Py_ssize_t dtype = slot_offset((PyTypeObject *)eager, "_dtype");
    Py_ssize_t where = slot_offset((PyTypeObject *)eager, "_device");
    if (value < 0 || dtype < 0 || where < 0) {
        return NULL;
    }
    Py_INCREF(ndarray);
    Py_INCREF(device);
    Py_XSETREF(ndarray_type, (PyTypeObject *)ndarray);
    Py_XSETREF(host_device, device);
    device_offset = where;
    Py_INCREF(eager);
    Py_INCREF(context);
    Py_INCREF(registry);
    Py_INCREF(instrument);
    Py_XSETREF(eager_type, (PyTypeObject *)eager);
    Py_XSETREF(context_dict, context);
    Py_XSETREF(registry_dict, registry);
    Py_XSETREF(instrument_dict, instrument);
    value_offset = value;
    dtype_offset = dtype;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(EagerTensor, context.__dict__, registry.__dict__, instrument.__dict__, "
     "numpy.ndarray, host device name)"},
    {NULL}
};

static struct PyModuleDef direct_module = {
    PyModuleDef_HEAD_INIT, "_direct", "The direct call path of jf.function, in C.", -1, module_methods,
};

PyMODINIT_FUNC
PyInit__direct(void)
{
    if (PyType_Ready(&FunctionBaseType) < 0) {
        return NULL;
    }
    str_scopes_open = PyUnicode_InternFromString("scopes_open");
    str_tape_active = PyUnicode_InternFromString("tape_active");
    str_enabled = PyUnicode_InternFromString("enabled");
    str_shape = PyUnicode_InternFromString("shape");
    str_call_general = PyUnicode_InternFromString("_call_general");
    if (!str_scopes_open || !str_tape_active || !str_enabled || !str_shape || !str_call_general) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&direct_module);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&FunctionBaseType);
    if (PyModule_AddObject(module, "FunctionBase", (PyObject *)&FunctionBaseType) < 0
            || PyModule_AddIntConstant(module, "ABI_VERSION", ABI_VERSION) < 0) {
        Py_DECREF(&FunctionBaseType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
