# rules for the score stage are added by its issue
