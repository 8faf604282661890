KNOWN = {}
