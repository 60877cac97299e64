print("QuickStart")
