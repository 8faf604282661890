"""`jf.config`: devices as TensorFlow's `tf.config` exposes them.

    >>> import jitflow as jf
    >>> [d.device_type for d in jf.config.list_physical_devices("CPU")]
    ['CPU']
"""
from jitflow.runtime.execution.config import (LogicalDevice, LogicalDeviceConfiguration,
                                              PhysicalDevice, experimental,
                                              get_logical_device_configuration, get_visible_devices,
                                              list_logical_devices, list_physical_devices,
                                              set_logical_device_configuration, set_visible_devices)
from jitflow.runtime.execution.config import functions_run_eagerly, run_functions_eagerly, threading

__all__ = ["run_functions_eagerly", "functions_run_eagerly", "list_physical_devices", "list_logical_devices",
           "set_visible_devices", "get_visible_devices",
           "set_logical_device_configuration", "get_logical_device_configuration", "experimental", "threading",
           "PhysicalDevice", "LogicalDevice", "LogicalDeviceConfiguration"]
