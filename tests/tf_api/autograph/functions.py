"""Functions whose AutoGraph conversion (`to_code`) is compared with TensorFlow's recording.

Plain functions (no decorator): `tf.autograph.to_code` / `jf.autograph.to_code` convert them
as the TF guide "Better performance with tf.function" shows.
"""


def plain(x, y):
    z = x + y
    return z * 2


def if_else(x):
    if x > 0:
        x = x * 2
    else:
        x = -x
    return x


def if_no_else(x):
    if x > 0:
        x = x * x
    return x


def while_loop(x):
    i = 0
    while i < 10:
        x = x + i
        i += 1
    return x


def early_return(x):
    if x > 0:
        return x
    return -x


def nested_if(x, y):
    if x > 0:
        if y > 0:
            x = x + y
        else:
            x = x - y
    return x


def for_break(n):
    s = 0
    for i in range(n):
        if i > 5:
            break
        s += i
    return s


def for_sum(xs):
    total = 0.0
    for x in xs:
        total = total + x
    return total


def calls(x):
    y = abs(x)
    return max(y, 1.0)


def sum_even(items):
    s = 0
    for c in items:
        if c % 2 > 0:
            continue
        s += c
    return s
