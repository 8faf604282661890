print("jitflow")
